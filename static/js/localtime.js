// Times in the visitor's own time zone. The server writes every moment as
// <time datetime="2026-03-01T12:00:00Z">2026-03-01 12:00 UTC</time>; this rewrites the text with
// the browser's time zone and keeps the UTC text as the element's title. An element with
// data-countdown="<ISO instant>" counts down to it every second and shows data-done at zero.
// Without JavaScript the UTC text and the server's countdown (as of the page load) stay.
(function () {
  var format = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
    timeZoneName: "short"
  });

  function localise() {
    document.querySelectorAll("time[datetime]:not([data-local])").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (isNaN(when.getTime())) return;
      el.title = el.textContent.trim();
      el.textContent = format.format(when);
      el.dataset.local = "1";
    });
  }

  function words(ms) {
    var s = Math.floor(ms / 1000);
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    if (d) return d + " d " + h + " h";
    if (h) return h + " h " + m + " min";
    if (m) return m + " min " + (s % 60) + " s";
    return (s % 60) + " s";
  }

  function tick() {
    document.querySelectorAll("[data-countdown]").forEach(function (el) {
      var left = new Date(el.dataset.countdown).getTime() - Date.now();
      el.textContent = left > 0 ? words(left) : (el.dataset.done || "now");
    });
  }

  function start() {
    localise();
    if (document.querySelector("[data-countdown]")) {
      tick();
      setInterval(tick, 1000);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
