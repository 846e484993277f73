// Pan and zoom of the graph page's SVG, and a click on a node opens the
// value. The page works without it: the SVG then scrolls at its size.
(function () {
	"use strict";
	var box = document.getElementById("graph");
	var svg = box && box.querySelector("svg");
	if (!svg || !svg.viewBox || !svg.viewBox.baseVal) {
		return;
	}
	document.documentElement.classList.add("js");
	var vb = svg.viewBox.baseVal;
	var home = { x: vb.x, y: vb.y, w: vb.width, h: vb.height };
	svg.setAttribute("width", "100%");
	svg.setAttribute("height", "100%");

	function toSVG(clientX, clientY) {
		var m = svg.getScreenCTM();
		return m ? new DOMPoint(clientX, clientY).matrixTransform(m.inverse()) : { x: vb.x + vb.width / 2, y: vb.y + vb.height / 2 };
	}
	function zoom(f, p) {
		vb.x = p.x - (p.x - vb.x) * f;
		vb.y = p.y - (p.y - vb.y) * f;
		vb.width *= f;
		vb.height *= f;
	}
	function centre() {
		var r = svg.getBoundingClientRect();
		return toSVG(r.left + r.width / 2, r.top + r.height / 2);
	}
	box.addEventListener("wheel", function (e) {
		e.preventDefault();
		zoom(e.deltaY < 0 ? 1 / 1.2 : 1.2, toSVG(e.clientX, e.clientY));
	}, { passive: false });
	document.getElementById("zoom-in").addEventListener("click", function () { zoom(1 / 1.4, centre()); });
	document.getElementById("zoom-out").addEventListener("click", function () { zoom(1.4, centre()); });
	document.getElementById("zoom-reset").addEventListener("click", function () {
		vb.x = home.x; vb.y = home.y; vb.width = home.w; vb.height = home.h;
	});

	var drag = null;
	box.addEventListener("pointerdown", function (e) {
		drag = { x: e.clientX, y: e.clientY, moved: false };
	});
	box.addEventListener("pointermove", function (e) {
		if (!drag) {
			return;
		}
		var m = svg.getScreenCTM();
		var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
		if (!m || (!drag.moved && Math.abs(dx) + Math.abs(dy) < 3)) {
			return;
		}
		if (!drag.moved) {
			drag.moved = true;
			box.setPointerCapture(e.pointerId);
			box.classList.add("dragging");
		}
		vb.x -= dx / m.a;
		vb.y -= dy / m.d;
		drag.x = e.clientX;
		drag.y = e.clientY;
	});
	function end() {
		box.classList.remove("dragging");
		setTimeout(function () { drag = null; }, 0);
	}
	box.addEventListener("pointerup", end);
	box.addEventListener("pointercancel", end);

	// The table under the graph links each value; a node with the same
	// key opens the same page.
	var links = {};
	document.querySelectorAll("a.node-link").forEach(function (a) { links[a.dataset.key] = a.href; });
	svg.querySelectorAll("g.node").forEach(function (g) {
		var t = g.querySelector("title");
		var href = t && links[t.textContent];
		if (!href) {
			return;
		}
		g.classList.add("linked");
		g.addEventListener("click", function () {
			if (!drag || !drag.moved) {
				window.location.href = href;
			}
		});
	});
}());
