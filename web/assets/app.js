// udpstp's page script: "run now" without leaving the page, the running
// test's progress from /events, and the overview's live part fetched again
// when a test ends. The page works without it (plain forms and links).
"use strict";
(function () {
  var status = document.getElementById("status");
  var events = 0; // events seen: news of the test that outdates the POST's answer

  function say(text, refused) {
    if (!status) return;
    status.textContent = text;
    status.className = refused ? "refused" : "";
    status.hidden = !text;
  }

  function setRunning(name) {
    document.querySelectorAll("form.run button").forEach(function (b) { b.disabled = !!name; });
    if (name) say("Running " + name + "…");
  }

  document.addEventListener("submit", function (e) {
    var f = e.target;
    if (!f.classList || !f.classList.contains("run")) return;
    e.preventDefault();
    var seen = events;
    fetch(f.action, {
      method: "POST", body: new URLSearchParams(new FormData(f)),
      headers: { "Accept": "text/plain" }, credentials: "same-origin"
    }).then(function (r) {
      return r.text().then(function (t) { if (!r.ok || events === seen) say(t.trim(), !r.ok); });
    }).catch(function (err) { say("The agent did not answer: " + err, true); });
  });

  // refresh fetches the live part again; a test's end may come before its
  // row is in the store, so it asks again a few times while the newest row
  // is the same.
  function refresh(attempt) {
    var cur = document.getElementById("live");
    if (!cur) return;
    var before = cur.dataset.latest;
    fetch("/live?" + cur.dataset.query).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (html) {
      var next = new DOMParser().parseFromString(html, "text/html").getElementById("live");
      if (!next) return;
      var node = document.importNode(next, true);
      cur.replaceWith(node);
      if (node.dataset.latest === before && attempt < 6) {
        setTimeout(function () { refresh(attempt + 1); }, 250 << attempt);
      }
    }).catch(function (err) { say("The page could not be updated: " + err.message, true); });
  }

  if (status && status.dataset.events && window.EventSource) {
    var es = new EventSource(status.dataset.events);
    es.addEventListener("state", function (e) { events++; setRunning(JSON.parse(e.data).running); });
    es.addEventListener("progress", function (e) {
      events++;
      var p = JSON.parse(e.data), text = "Running " + (p.test || "a test");
      if (p.direction) text += " (" + p.direction + ")";
      if (p.event === "subinterval") text += ": Sub-Interval " + p.interval + ", " + (p.mbps == null ? "–" : p.mbps.toFixed(1)) + " Mbit/s";
      else if (p.message) text += ": " + p.message;
      else text += "…";
      say(text, p.event === "error");
    });
    es.addEventListener("result", function (e) {
      events++;
      var p = JSON.parse(e.data);
      say((p.test || "The test") + " has ended.");
      setRunning("");
      refresh(0);
    });
  }
})();
