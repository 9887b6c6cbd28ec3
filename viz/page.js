"use strict";
const data = JSON.parse(document.getElementById("tg-data").textContent);
const SVG = "http://www.w3.org/2000/svg";
const nodes = new Map(data.nodes.map((node) => [node.id, node]));
const stepsOf = new Map();  // drawn node -> the step numbers of the ops it shows
data.steps.forEach((step, index) => {
  if (!stepsOf.has(step.node)) stepsOf.set(step.node, []);
  stepsOf.get(step.node).push(index + 1);
});
const state = { step: 0, pinned: null, level: 0 };
const NODE_HEIGHT = 36;

function make(tag, attributes, parent, namespace) {
  const element = namespace ? document.createElementNS(SVG, tag) : document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) element.setAttribute(key, value);
  if (parent) parent.appendChild(element);
  return element;
}
function svg(tag, attributes, parent) { return make(tag, attributes, parent, true); }
function text(tag, content, attributes, parent) {
  const element = make(tag, attributes, parent);
  element.textContent = content;
  return element;
}

function number(value) {
  if (typeof value === "string") return value;  // nan, inf, -inf
  if (value === 0) return "0";
  return String(Number(value.toPrecision(6)));
}
function numbers(values) { return "[" + values.map(number).join(", ") + "]"; }

// ---- the graph -----------------------------------------------------------------------------

const viewport = document.getElementById("viewport");
// x * x has two edges between the same nodes: bend them apart, labels on either side.
const pairCount = new Map(), pairSeen = new Map();
for (const edge of data.edges) {
  const pair = edge.from + " " + edge.to;
  pairCount.set(pair, (pairCount.get(pair) || 0) + 1);
}
const edgeElements = data.edges.map((edge) => {
  const source = nodes.get(edge.from), target = nodes.get(edge.to);
  const pair = edge.from + " " + edge.to, index = pairSeen.get(pair) || 0;
  pairSeen.set(pair, index + 1);
  const spread = 28 * (index - (pairCount.get(pair) - 1) / 2);
  const group = svg("g", { class: "edge", "data-from": edge.from, "data-to": edge.to }, viewport);
  const y1 = source.y + NODE_HEIGHT / 2, y2 = target.y - NODE_HEIGHT / 2, middle = (y1 + y2) / 2;
  // The arrowhead is the stylesheet's (marker-end by class): one size, the edge's colour.
  const path = svg("path", { d: `M${source.x},${y1} C${source.x + spread},${middle} ` +
    `${target.x + spread},${middle} ${target.x},${y2}` }, group);
  let label = null;
  if (edge.grad) {
    label = svg("text", { "data-field": "edge-grad" }, group);
    label.textContent = edge.grad.values && edge.grad.values.length <= 4
      ? "∇ " + numbers(edge.grad.values) : `∇ ‖${number(edge.grad.norm)}‖`;
  }
  return { edge, group, path, label };
});

const nodeElements = new Map();
for (const node of data.nodes) {
  const group = svg("g", { class: "node " + node.kind, "data-node": node.id,
    transform: `translate(${node.x},${node.y})` }, viewport);
  svg("rect", { x: -node.w / 2, y: -NODE_HEIGHT / 2, width: node.w, height: NODE_HEIGHT, rx: 7 },
    group);
  // The badge of the node's backward steps sits in its own room at the right, so that it
  // never covers the label; the two lines of text are centred in the rest.
  const room = node.badge_width || 0, centre = -room / 2, inner = node.w - room - 12;
  fitText(svg("text", { x: centre, y: node.sub ? -3 : 4, "data-field": "label" }, group),
    node.label, inner);
  if (node.sub) fitText(svg("text", { x: centre, y: 11, class: "sub" }, group), node.sub, inner);
  if (node.badge) {
    const badge = svg("g", { class: "badge", transform: `translate(${node.w / 2 - room / 2},0)` },
      group);
    svg("rect", { x: -room / 2 + 3, y: -8, width: room - 6, height: 16, rx: 8 }, badge);
    const order = svg("text", { y: 3.5, "text-anchor": "middle", "data-field": "order" }, badge);
    order.textContent = node.badge;
  }
  group.addEventListener("mouseenter", () => { if (!state.pinned) showDetails(node.id); });
  group.addEventListener("mouseleave", () => { if (!state.pinned) showDetails(null); });
  group.addEventListener("click", (event) => { event.stopPropagation(); pin(node.id); });
  nodeElements.set(node.id, group);
}

function fitText(element, content, width) {
  // Python sized the node from a guess of the text's width: squeeze a text that is wider.
  element.textContent = content;
  if (element.getComputedTextLength() > width) {
    element.setAttribute("textLength", width);
    element.setAttribute("lengthAdjust", "spacingAndGlyphs");
  }
}

// Edge labels: each at the first point along its edge (from the middle outwards, either
// side) where its box meets no node and no label placed before it.
function overlaps(a, b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}
function placeLabels() {
  const taken = data.nodes.map((node) => ({ x: node.x - node.w / 2, y: node.y - NODE_HEIGHT / 2,
    w: node.w, h: NODE_HEIGHT }));
  for (const { path, label } of edgeElements) {
    if (!label) continue;
    label.style.display = "inline";  // hidden labels measure as empty
    const size = label.getBBox(), length = path.getTotalLength();
    label.style.display = "";
    const box = (t, side, drop) => {
      const point = path.getPointAtLength(length * t);
      const x = side > 0 ? point.x + 4 : point.x - 4 - size.width;
      return { x, y: point.y - size.height / 2 + drop, w: size.width, h: size.height };
    };
    let chosen = null;
    for (const t of [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8]) {
      for (const side of [1, -1]) {
        const candidate = box(t, side, 0);
        if (!taken.some((other) => overlaps(candidate, other))) { chosen = candidate; break; }
      }
      if (chosen) break;
    }
    for (let drop = 1; !chosen; drop++) {  // crowded: the first free place below the middle
      const candidate = box(0.5, 1, drop * (size.height + 1));
      if (!taken.some((other) => overlaps(candidate, other))) chosen = candidate;
    }
    taken.push(chosen);
    label.setAttribute("x", chosen.x);
    label.setAttribute("y", chosen.y + chosen.h / 2);
  }
}
placeLabels();

// ---- pan and zoom --------------------------------------------------------------------------

const canvas = document.getElementById("graph");
const view = { x: 0, y: 0, w: 100, h: 100 };
function applyView() { canvas.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`); }
function bounds() {
  let left = Infinity, top = Infinity, right = -Infinity, bottom = -Infinity;
  for (const node of data.nodes) {
    left = Math.min(left, node.x - node.w / 2); right = Math.max(right, node.x + node.w / 2);
    top = Math.min(top, node.y - NODE_HEIGHT); bottom = Math.max(bottom, node.y + NODE_HEIGHT);
  }
  return { left: left - 20, top: top - 20, right: right + 20, bottom: bottom + 20 };
}
function fit() {
  const box = bounds(), width = canvas.clientWidth || 800, height = canvas.clientHeight || 600;
  // Never smaller than half size: a tall graph opens at its bottom, where backward starts.
  const fits = Math.min(width / (box.right - box.left), height / (box.bottom - box.top), 1.5);
  const scale = Math.max(fits, 0.5);
  view.w = width / scale; view.h = height / scale;
  view.x = (box.left + box.right) / 2 - view.w / 2;
  view.y = Math.max(box.top, box.bottom - view.h);
  applyView();
}
function keepInView(node) {
  if (!node) return;
  const inside = node.x > view.x && node.x < view.x + view.w && node.y > view.y &&
    node.y < view.y + view.h;
  if (!inside) { view.x = node.x - view.w / 2; view.y = node.y - view.h / 2; applyView(); }
}
canvas.addEventListener("wheel", (event) => {
  event.preventDefault();
  const factor = event.deltaY > 0 ? 1.15 : 1 / 1.15, box = canvas.getBoundingClientRect();
  const px = view.x + (event.clientX - box.left) / box.width * view.w;
  const py = view.y + (event.clientY - box.top) / box.height * view.h;
  view.w *= factor; view.h *= factor;
  view.x = px - (px - view.x) * factor; view.y = py - (py - view.y) * factor;
  applyView();
}, { passive: false });
let drag = null;
canvas.addEventListener("mousedown", (event) => { drag = { x: event.clientX, y: event.clientY }; });
window.addEventListener("mouseup", () => { drag = null; });
window.addEventListener("mousemove", (event) => {
  if (!drag) return;
  const box = canvas.getBoundingClientRect();
  view.x -= (event.clientX - drag.x) / box.width * view.w;
  view.y -= (event.clientY - drag.y) / box.height * view.h;
  drag = { x: event.clientX, y: event.clientY };
  applyView();
});
canvas.addEventListener("click", () => pin(null));

// ---- the details panel ---------------------------------------------------------------------

const panel = document.getElementById("panel");

function valueBox(title, summary, role, parent) {
  const box = make("div", { class: "box " + role, "data-field": role }, parent);
  text("b", title + " ", {}, box);
  if (!summary) { text("span", "none recorded", { class: "pending" }, box); return box; }
  const kind = summary.shape + (summary.dtype ? " " + summary.dtype : "");
  text("span", kind, { "data-field": "shape" }, box);
  if (summary.min !== undefined) {
    const stats = make("div", {}, box);
    for (const key of ["min", "mean", "max", "norm"]) {
      if (summary[key] === undefined) continue;
      text("span", `${key} `, {}, stats);
      text("span", number(summary[key]), { "data-field": key }, stats);
      text("span", "  ", {}, stats);
    }
  }
  if (summary.values) text("code", numbers(summary.values), { "data-field": "values" }, box);
  return box;
}

function opDetails(node) {
  text("h2", `${node.id} ${node.label} → ${node.output}`, { "data-field": "heading" }, panel);
  const steps = stepsOf.get(node.id);
  text("div", steps ? `backward step ${steps[0]} of ${data.steps.length}` : "not visited",
    { "data-field": "step" }, panel);
  if (node.rule) text("div", node.rule, { class: "rule", "data-field": "rule" }, panel);
  if (node.labelled_rule) {
    text("div", node.labelled_rule, { class: "rule", "data-field": "labelled-rule" }, panel);
  }
  valueBox(`value of ${node.output}`, node.value, "value", panel);
  valueBox(`gradient arriving at ${node.output}`, node.grad, "grad", panel);
  node.operands.forEach((operand, index) => {
    text("h2", `input ${index}: ${operand.label}`, {}, panel);
    if (operand.value) valueBox("value", operand.value, "value", panel);
    const box = valueBox("gradient sent back", operand.grad, "grad", panel);
    box.setAttribute("data-operand", index);
  });
}

function leafDetails(node) {
  text("h2", `${node.id} ${node.label}`, { "data-field": "heading" }, panel);
  text("div", `a ${node.kind}: its gradient lands in .grad`, {}, panel);
  valueBox("value", node.value, "value", panel);
  valueBox("gradient (total)", node.grad, "grad", panel);
}

function elidedDetails(node) {
  text("h2", node.label, { "data-field": "heading" }, panel);
  text("p", "The nodes farthest from the loss are not drawn (max_nodes). Group the module " +
    "calls (groups= and depth=) to see the whole graph folded.", {}, panel);
}

function ranges(numbers) {  // [1, 2, 3, 7] -> "1–3, 7"
  const parts = [];
  for (let i = 0; i < numbers.length; i++) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j] + 1) j++;
    parts.push(j > i ? `${numbers[i]}–${numbers[j]}` : String(numbers[i]));
    i = j;
  }
  return parts.join(", ");
}

function groupDetails(node) {
  text("h2", node.label, { "data-field": "heading" }, panel);
  const steps = stepsOf.get(node.id) || [];
  text("div", `${node.members.length} ops, ` + (steps.length
    ? `backward steps ${ranges(steps)}` : "none visited one by one"), {}, panel);
  for (const line of node.ops || []) text("div", line, { "data-field": "member" }, panel);
  if (node.kind === "scan") scanDetails(node);
}

function intervalName(node, first, last) {
  const count = node.anchors.length - 1;
  if (first === 0) return `g(${node.anchors[count - last]})`;
  return first === last ? `J${count - first + 1}` : `J${count - first + 1}…J${count - last + 1}`;
}

function scanDetails(node) {
  const scan = node.levels;
  text("div", `The scan computed the gradients of every anchor ${node.anchors.join(", ")} at ` +
    "once; its ops were not visited one by one.", {}, panel);
  if (scan.unknown) { text("p", scan.unknown, { "data-field": "levels" }, panel); return; }
  const count = node.anchors.length, levels = scan.levels;
  state.level = Math.min(state.level, levels.length);
  const bar = make("div", {}, panel);
  const back = text("button", "◀ level", {}, bar), forward = text("button", "level ▶", {}, bar);
  text("span", ` level ${state.level} of ${levels.length} (${scan.method})`,
    { "data-field": "level" }, bar);
  back.onclick = () => { state.level = Math.max(0, state.level - 1); showDetails(node.id); };
  forward.onclick = () => {
    state.level = Math.min(levels.length, state.level + 1);
    showDetails(node.id);
  };
  // One row per level, labelled at the left; one column per position of the chain,
  // labelled at the top (a label that would run into the one before it is left out).
  const left = 52, cell = Math.max(10, Math.min(40, 290 / count));
  const size = { width: left + cell * count + 4, height: 22 * levels.length + 24 };
  const picture = svg("svg", { class: "levels", ...size }, panel);
  let free = left;
  for (let position = 0; position < count; position++) {
    const name = intervalName(node, position, position).replace("g(", "").replace(")", "");
    const label = svg("text", { x: left + cell * position + cell / 2 + 2, y: 12,
      "data-field": "position" }, picture);
    label.textContent = name;
    const box = label.getBBox();
    if (box.x < free) label.remove();
    else free = box.x + box.width + 3;
  }
  levels.forEach((pairs, index) => {
    const y = 18 + 22 * index;
    svg("text", { x: 2, y: y + 12, class: "level-name", "data-field": "level-name" },
      picture).textContent = `level ${index + 1}`;
    for (const [a, , , d] of pairs) {
      const made = index + 1 === state.level ? "now" : index + 1 < state.level ? "made" : "";
      svg("rect", { x: left + cell * a + 2, y, width: cell * (d - a + 1) - 2, height: 16,
        class: made }, picture);
    }
  });
  if (state.level > 0) {
    const list = make("div", { class: "box" }, panel);
    for (const [a, b, c, d] of levels[state.level - 1]) {
      const left = intervalName(node, a, b), right = intervalName(node, c, d);
      text("div", `${left} · ${right} → ${intervalName(node, a, d)}`,
        { "data-field": "combine" }, list);
    }
  }
}

function showDetails(nodeId) {
  panel.textContent = "";
  const shown = nodeId || (state.step ? data.steps[state.step - 1].node : null);
  if (!shown) {
    text("h2", data.title, {}, panel);
    text("p", `${data.steps.length} backward steps, recorded from the ${data.scheduler} ` +
      "scheduler. Step with the buttons or the arrow keys; hover over or click a node for " +
      "its numbers.", {}, panel);
    return;
  }
  const node = nodes.get(shown);
  panel.setAttribute("data-showing", shown);
  if (node.kind === "op" || node.kind === "output") opDetails(node);
  else if (node.kind === "call" || node.kind === "scan") groupDetails(node);
  else if (node.kind === "elided") elidedDetails(node);
  else leafDetails(node);
}

function pin(nodeId) {
  if (state.pinned) nodeElements.get(state.pinned).classList.remove("selected");
  state.pinned = nodeId;
  state.level = 0;
  if (nodeId) nodeElements.get(nodeId).classList.add("selected");
  showDetails(nodeId);
}

// ---- stepping through the walk -------------------------------------------------------------

const slider = document.getElementById("slider");
slider.max = data.steps.length;

function go(step) {
  state.step = Math.max(0, Math.min(data.steps.length, step));
  const current = state.step ? data.steps[state.step - 1] : null;
  for (const [id, group] of nodeElements) {
    const steps = stepsOf.get(id) || [];
    group.classList.toggle("current", current !== null && current.node === id);
    group.classList.toggle("done", steps.some((number) => number < state.step));
  }
  for (const { edge, group } of edgeElements) {
    // Only an edge a gradient came back along lights up (none flows into x, a constant).
    const ran = edge.carries && edge.step !== null;
    group.classList.toggle("arrived", ran && edge.step <= state.step);
    group.classList.toggle("sending", ran && edge.step === state.step);
  }
  slider.value = state.step;
  const counter = document.getElementById("counter");
  const total = data.steps.length;
  counter.textContent = current
    ? `step ${state.step} / ${total}: ${current.op} ${nodes.get(current.node).label}`
    : `step 0 / ${total}: before backward`;
  counter.setAttribute("data-current", current ? current.op : "");
  if (!state.pinned) showDetails(null);
  if (current) keepInView(nodes.get(current.node));
}

document.getElementById("first").onclick = () => go(0);
document.getElementById("prev").onclick = () => go(state.step - 1);
document.getElementById("next").onclick = () => go(state.step + 1);
document.getElementById("last").onclick = () => go(data.steps.length);
document.getElementById("fit").onclick = fit;
slider.oninput = () => go(Number(slider.value));
window.addEventListener("keydown", (event) => {
  const moves = { ArrowRight: 1, ArrowLeft: -1 };
  if (event.key in moves) go(state.step + moves[event.key]);
  else if (event.key === "Home") go(0);
  else if (event.key === "End") go(data.steps.length);
});
document.getElementById("title").textContent = `${data.title} (${data.scheduler})`;
fit();
go(0);
