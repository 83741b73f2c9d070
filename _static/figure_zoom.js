/* Tap (or click) a figure to see it at full size.

   On a phone the book shrinks a figure to the text column (a 1037 px chapter figure to about
   390 px), and its 9 pt labels fall to a few pixels. A figure shown narrower than it was drawn is
   marked zoomable (cursor: zoom-in); a tap opens it at its natural size (at the figures' 150 dpi,
   9 pt text is 19 px high) in a layer that scrolls both ways, scrolled so that the point tapped
   is in the middle of the screen (the figure's centre when opened from the keyboard). A tap on
   the layer, the close button or Escape closes it. Jupyter Book loads every .js file in _static on every page. */
(function () {
  "use strict";

  var SHRUNK = 1.05; // zoomable when drawn more than 5 % wider than shown

  function shrunk(img) {
    var shown = img.getBoundingClientRect().width;
    return shown > 0 && img.naturalWidth > SHRUNK * shown;
  }

  function open(img, at) {
    var layer = document.createElement("div");
    layer.className = "figure-zoom";
    layer.setAttribute("role", "dialog");
    layer.setAttribute("aria-modal", "true");
    layer.setAttribute("aria-label", "The figure at full size (tap or press Escape to close)");
    var close = document.createElement("button");
    close.type = "button";
    close.className = "figure-zoom-close";
    close.setAttribute("aria-label", "Close");
    close.textContent = "\u00d7";
    var big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    big.width = img.naturalWidth;
    big.height = img.naturalHeight; // laid out at once, so the layer can scroll to the tap
    layer.appendChild(close);
    layer.appendChild(big);

    function onKey(event) {
      if (event.key === "Escape") shut();
    }
    function shut() {
      layer.remove();
      document.body.classList.remove("figure-zoom-open");
      document.removeEventListener("keydown", onKey);
      img.focus({ preventScroll: true });
    }
    layer.addEventListener("click", shut); // panning scrolls; only a tap is a click
    document.addEventListener("keydown", onKey);
    document.body.classList.add("figure-zoom-open");
    document.body.appendChild(layer);
    layer.scrollLeft = at.x * big.width - layer.clientWidth / 2;
    layer.scrollTop = at.y * big.height - layer.clientHeight / 2;
    close.focus({ preventScroll: true });
  }

  function tapped(img, event) {
    // Where on the shown figure the tap was, as fractions of its width and height.
    var r = img.getBoundingClientRect();
    return { x: (event.clientX - r.left) / r.width, y: (event.clientY - r.top) / r.height };
  }

  function mark(img) {
    var zoomable = img.complete && shrunk(img);
    img.classList.toggle("figure-zoomable", zoomable);
    var figure = img.closest("figure"); // its caption says so on a phone (book.css)
    if (figure) figure.classList.toggle("figure-has-zoom", zoomable);
    if (zoomable) {
      img.tabIndex = 0;
      img.title = "Tap to enlarge";
    } else {
      img.removeAttribute("tabindex");
      img.removeAttribute("title");
    }
  }

  function setUp() {
    var images = Array.prototype.filter.call(
      document.querySelectorAll("article.bd-article img"),
      function (img) { return !img.closest("a"); } // a linked image keeps its link
    );
    images.forEach(function (img) {
      if (img.complete) mark(img);
      else img.addEventListener("load", function () { mark(img); });
      img.addEventListener("click", function (event) {
        if (shrunk(img)) open(img, tapped(img, event));
      });
      img.addEventListener("keydown", function (event) {
        if ((event.key === "Enter" || event.key === " ") && shrunk(img)) {
          event.preventDefault();
          open(img, { x: 0.5, y: 0.5 });
        }
      });
    });
    window.addEventListener("resize", function () { images.forEach(mark); });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();
