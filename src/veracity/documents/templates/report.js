// The standalone report's only script (no other runs: the page's CSP allows this one by
// its hash). Selecting a highlight opens its claim's details: verdict, rationale,
// evidence and any suggested correction.
(function () {
  "use strict";
  function open(id, from) {
    var detail = document.getElementById("claim-" + id);
    if (!detail) { return; }
    detail.open = true;
    document.querySelectorAll("mark.claim-mark.selected").forEach(function (m) {
      m.classList.remove("selected");
    });
    if (from) { from.classList.add("selected"); }
    detail.scrollIntoView({ block: "nearest" });
    var summary = detail.querySelector("summary");
    if (summary) { summary.focus({ preventScroll: true }); }
  }
  function first(mark) { return (mark.getAttribute("data-claims") || "").split(" ")[0]; }
  document.querySelectorAll("mark.claim-mark").forEach(function (mark) {
    mark.addEventListener("click", function () { open(first(mark), mark); });
    mark.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        open(first(mark), mark);
      }
    });
  });
  document.querySelectorAll("a.claim-link").forEach(function (link) {
    link.addEventListener("click", function () { open(link.getAttribute("data-claim"), null); });
  });
}());
