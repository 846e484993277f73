// Package graphviz renders a scheduler's graph snapshot
// (scheduler.GraphSnapshot) as DOT, the graphviz language, and as SVG by
// running graphviz's dot command.
//
// # What it promises
//
//   - The DOT text is a function of the snapshot and the options only:
//     nodes, clusters and edges are written sorted, so the same snapshot
//     always gives the same bytes (fit for golden files and diffs).
//   - Every key, label, value and error is escaped: any text becomes a
//     quoted DOT string that graphviz reads back as that text. Keys are the
//     node IDs, so the <title> elements of an SVG are the keys, exactly.
//     Graphviz reads HTML entities in strings, so '&' is written "&amp;"
//     everywhere, and a backslash or line break in a key is written as a
//     character reference in its ID. One limit: graphviz 2.x reads the
//     escapes of tooltips twice, so in a tooltip (only there) a run of
//     backslashes may show shortened.
//   - Nodes are filled with the colour of their state, PENDING ones have a
//     dashed border, derived values are ellipses, placeholders (targets of
//     unmet dependencies that nothing provides) are dashed and unfilled.
//     Derived edges are blue and bold with a diamond head, AnyOf edges have
//     a hollow head, unmet dependencies are red and dashed. With Highlight,
//     the keys that the snapshot's transaction touched get a thick border.
//   - SVG runs dot from PATH and fails with an error wrapping ErrNoGraphviz
//     when it is not installed; DOT output never needs graphviz.
package graphviz
