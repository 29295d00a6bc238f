// Renders the figures the server built with plotly's Python API. Each chart is a <div
// data-figure="ID"> next to a <script type="application/json" id="ID"> holding fig.to_json().
// Without JavaScript the tables on the page carry the same numbers. A result swapped in by htmx
// (the live status of a submission) brings its chart along: it is drawn after the swap.
(function () {
  function render() {
    if (typeof Plotly === "undefined") return;
    document.querySelectorAll("div[data-figure]:not([data-rendered])").forEach(function (div) {
      var source = document.getElementById(div.dataset.figure);
      if (!source) return;
      var fig = JSON.parse(source.textContent);
      div.textContent = "";
      div.dataset.rendered = "0";
      Plotly.newPlot(div, fig.data, fig.layout, {responsive: true, displaylogo: false})
        .then(function () { div.dataset.rendered = "1"; });
    });
  }
  document.addEventListener("htmx:afterSwap", render);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", render);
  } else {
    render();
  }
})();
