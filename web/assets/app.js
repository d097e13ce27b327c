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

  // stale: the live part node, fetched after test's end, may not show it
  // yet. A test's end may come before its row is in the store (the newest
  // row is still before), and a scheduled test's next slot is drawn after
  // its result is stored and the test lock let go (its row still says it
  // is due while no other test runs).
  function stale(node, before, test) {
    if (node.dataset.latest === before) return true;
    if (!test || (node.dataset.running && node.dataset.running !== test)) return false;
    var rows = node.querySelectorAll("tr[data-test]");
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].dataset.test === test) return !!rows[i].querySelector("[data-due]");
    }
    return false;
  }

  // refresh fetches the live part again after test's end, a few times
  // while it is stale.
  function refresh(attempt, test) {
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
      if (attempt < 6 && stale(node, before, test)) {
        setTimeout(function () { refresh(attempt + 1, test); }, 250 << attempt);
      }
    }).catch(function (err) { say("The page could not be updated: " + err.message, true); });
  }

  // inWords is web/next.go's inWords, in the same words: how far off a
  // time ms milliseconds away is.
  function inWords(ms) {
    if (ms <= 0) return "due now";
    var m = Math.round(ms / 60000);
    if (m < 1) return "in under a minute";
    if (m < 60) return "in " + m + " min";
    var h = Math.floor(m / 60);
    m %= 60;
    if (h < 24) return "in " + h + " h" + (m ? " " + m + " min" : "");
    var d = Math.floor(h / 24);
    h %= 24;
    return "in " + d + " d" + (h ? " " + h + " h" : "");
  }

  // The next runs' words stay current while the page is open, and at once
  // when it is shown again (a hidden tab's timers are slowed); a slot that
  // has come keeps the server's words ("due now", "running now") until
  // the test's end fetches the live part again.
  function nextWords() {
    document.querySelectorAll("td.next time").forEach(function (t) {
      var words = t.nextElementSibling, ms = Date.parse(t.dateTime) - Date.now();
      if (!words || isNaN(ms) || (ms <= 0 && words.hasAttribute("data-due"))) return;
      words.textContent = "(" + inWords(ms) + ")";
      if (ms <= 0) words.setAttribute("data-due", "");
    });
  }
  setInterval(nextWords, 30000);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) nextWords(); });

  if (status && status.dataset.events && window.EventSource) {
    var es = new EventSource(status.dataset.events);
    es.addEventListener("state", function (e) {
      events++;
      status.dataset.stream = "open"; // the server has subscribed this page
      setRunning(JSON.parse(e.data).running);
    });
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
      refresh(0, p.test);
    });
  }
})();
