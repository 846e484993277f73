// Live updates: the page follows the agent's status changes (server-sent
// events from GET events, fed by the API's Watch) and updates the values
// it shows, without a reload. The page works without it: it is then what
// it was when loaded.
(function () {
	"use strict";
	var ind = document.getElementById("live");
	if (!ind || !window.EventSource || !window.JSON) {
		return;
	}
	var shown = new Map();
	document.querySelectorAll("[data-key]").forEach(function (el) {
		var k = el.dataset.key;
		if (!shown.has(k)) {
			shown.set(k, []);
		}
		shown.get(k).push(el);
	});
	var table = document.getElementById("values");
	var news = 0, updates = 0;

	function say(cls, text) {
		ind.className = "live " + cls;
		ind.textContent = text;
	}
	function setState(span, state) {
		span.textContent = state;
		span.className = "state " + (/^[A-Z_]+$/.test(state) ? "st-" + state : "st-unknown");
	}
	function update(el, st) {
		el.dataset.state = st.state;
		var span = el.querySelector(".state");
		if (span) {
			setState(span, st.state);
		}
		var waits = el.querySelector(".waits");
		if (waits && st.state !== "PENDING") {
			waits.remove(); // what it waited for is no longer why
		}
		var err = el.querySelector("[data-field=error]");
		if (err) {
			err.textContent = st.error || "";
		}
		el.classList.remove("changed");
		void el.offsetWidth; // restart the highlight
		el.classList.add("changed");
	}
	// addRow adds a value that the values table did not show, when it
	// matches the table's state filter (the stream is of its prefix).
	function addRow(st) {
		if (!table || (table.dataset.stateFilter && table.dataset.stateFilter !== st.state)) {
			return null;
		}
		var tr = document.createElement("tr");
		tr.dataset.key = st.key;
		var td = document.createElement("td");
		var a = document.createElement("a");
		a.href = "value?key=" + encodeURIComponent(st.key);
		a.className = "key";
		a.textContent = st.key;
		td.appendChild(a);
		tr.appendChild(td);
		td = document.createElement("td");
		var span = document.createElement("span");
		span.className = "state";
		td.appendChild(span);
		tr.appendChild(td);
		td = document.createElement("td");
		td.textContent = st.owner || "";
		tr.appendChild(td);
		tr.appendChild(document.createElement("td"));
		td = document.createElement("td");
		td.textContent = st.last_op && st.last_op !== "NONE" ? st.last_op : "";
		tr.appendChild(td);
		td = document.createElement("td");
		var err = document.createElement("div");
		err.className = "error";
		err.dataset.field = "error";
		td.appendChild(err);
		tr.appendChild(td);
		table.tBodies[0].appendChild(tr);
		var els = [tr];
		shown.set(st.key, els);
		return els;
	}

	var prefix = ind.dataset.prefix || "";
	var es = new EventSource("events" + (prefix ? "?prefix=" + encodeURIComponent(prefix) : ""));
	es.addEventListener("ready", function () {
		say("on", "live");
	});
	es.addEventListener("status", function (e) {
		var st = JSON.parse(e.data);
		var els = shown.get(st.key) || addRow(st);
		updates++;
		if (!els) {
			news++;
			ind.title = news + " changed value" + (news > 1 ? "s" : "") + " not on this page: reload to see them";
			return;
		}
		els.forEach(function (el) { update(el, st); });
		ind.dataset.updates = String(updates);
	});
	es.addEventListener("lost", function () {
		say("lost", "live: updates lost, reload");
	});
	es.addEventListener("end", function () {
		say("wait", "reconnecting");
	});
	es.onerror = function () {
		if (es.readyState === EventSource.CLOSED) {
			say("off", "live updates off");
		} else {
			say("wait", "reconnecting");
		}
	};
}());
