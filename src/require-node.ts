// Imported first by every entry point (src/main.ts, src/cli/main.ts): ES modules run in import
// order, so an unsuitable Node.js stops here, with one line, before any other module loads.
// Node.js before 22.18 cannot read a .ts file at all and fails before this runs; bin/zona.js
// repeats the check in plain JavaScript for that reason.

/**
 * The oldest Node.js major version Zona runs on. package.json declares no `engines`: npm would warn
 * at install on the machine's older `node`, though the project brings its own Node.js 24.
 */
export const MINIMUM_NODE_MAJOR = 24;

/** Why a Node.js version (`process.version`) cannot run Zona, or undefined when it can. */
export function nodeVersionProblem(version: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (major >= MINIMUM_NODE_MAJOR) return undefined;
  return (
    `Node.js ${MINIMUM_NODE_MAJOR} or newer is needed, this is ${version}: ` +
    `start Zona with \`npm start\` (it uses the Node.js ${MINIMUM_NODE_MAJOR} installed with Zona) or install Node.js ${MINIMUM_NODE_MAJOR}`
  );
}

const problem = nodeVersionProblem(process.version);
if (problem !== undefined) {
  process.stderr.write(`zona: ${problem}\n`);
  process.exit(1);
}
