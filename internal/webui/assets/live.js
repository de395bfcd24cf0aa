// Reloads the main part of a page that asks for it (data-refresh on
// <body>, in seconds) without a full page load; the page itself works
// without this script through a <noscript> meta refresh.
(function () {
  "use strict";
  var secs = Number(document.body.dataset.refresh || 0);
  if (!secs) {
    return;
  }
  function refresh() {
    fetch(window.location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then(function (resp) {
        if (!resp.ok || resp.redirected) {
          window.location.reload();
          return null;
        }
        return resp.text();
      })
      .then(function (html) {
        if (html === null) {
          return;
        }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        if (fresh) {
          document.getElementById("main").replaceWith(fresh);
          document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
        }
      })
      .catch(function () { /* the server is away: try again next time */ })
      .finally(function () { window.setTimeout(refresh, secs * 1000); });
  }
  window.setTimeout(refresh, secs * 1000);
})();
