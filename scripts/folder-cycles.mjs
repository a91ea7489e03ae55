#!/usr/bin/env node
/**
 * Fails when the top-level folders of src/ import each other in a cycle
 * (dependency-cruiser's rules are per file, so this builds the folder graph
 * from its cruise). One line per cycle, e.g.
 * `folder cycle: agent → tools → helpers → agent`; exit code 1 if any.
 * `src/main.ts` counts as the folder `main`. Run by `npm run lint:deps`.
 */
import { cruise } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

const options = await extractDepcruiseOptions('./.dependency-cruiser.cjs');
const tsConfig = extractTSConfig('tsconfig.json');
// The folder graph only: the file rules are reported by `depcruise` itself.
const { output } = await cruise(
  ['src'],
  { ...options, ruleSet: undefined, validate: false },
  {},
  { tsConfig },
);

/** `src/<folder>/…` → folder; `src/main.ts` → `main`; anything else → null. */
function folderOf(path) {
  const match = /^src\/([^/]+?)(?:\/|\.ts$)/.exec(path);
  return match ? match[1] : null;
}

/** folder → (folder → first file import seen, for the message) */
const graph = new Map();
for (const module of output.modules) {
  const from = folderOf(module.source);
  if (!from) continue;
  if (!graph.has(from)) graph.set(from, new Map());
  for (const dependency of module.dependencies) {
    const to = folderOf(dependency.resolved);
    if (!to || to === from || graph.get(from).has(to)) continue;
    graph.get(from).set(to, `${module.source} → ${dependency.resolved}`);
  }
}

// Tarjan's strongly connected components: each component of more than one folder holds cycles.
let index = 0;
const indexOf = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const components = [];
function connect(node) {
  indexOf.set(node, index);
  low.set(node, index);
  index++;
  stack.push(node);
  onStack.add(node);
  for (const next of graph.get(node)?.keys() ?? []) {
    if (!indexOf.has(next)) {
      connect(next);
      low.set(node, Math.min(low.get(node), low.get(next)));
    } else if (onStack.has(next)) {
      low.set(node, Math.min(low.get(node), indexOf.get(next)));
    }
  }
  if (low.get(node) === indexOf.get(node)) {
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) components.push(new Set(component));
  }
}
for (const node of [...graph.keys()].sort()) if (!indexOf.has(node)) connect(node);

/** The shortest cycle through `start` inside `component` (breadth-first), as a list of folders. */
function shortestCycle(start, component) {
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const next of [...(graph.get(node)?.keys() ?? [])].sort()) {
      if (!component.has(next)) continue;
      if (next === start) {
        const path = [node];
        while (previous.get(path[0]) !== null) path.unshift(previous.get(path[0]));
        return [...path, start];
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return null;
}

// One line per distinct shortest cycle through each folder of a component.
const seen = new Set();
const lines = [];
for (const component of components) {
  for (const start of [...component].sort()) {
    const cycle = shortestCycle(start, component);
    const ring = cycle.slice(0, -1);
    const first = ring.indexOf([...ring].sort()[0]);
    const key = [...ring.slice(first), ...ring.slice(0, first)].join(' → ');
    if (seen.has(key)) continue;
    seen.add(key);
    const edges = cycle.slice(0, -1).map((from, i) => graph.get(from).get(cycle[i + 1]));
    lines.push(`folder cycle: ${cycle.join(' → ')}  (${edges.join('; ')})`);
  }
}
if (lines.length === 0) {
  console.log(`no folder cycles among ${graph.size} folders of src/`);
} else {
  for (const line of lines) console.log(line);
  process.exitCode = 1;
}
