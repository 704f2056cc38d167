#!/usr/bin/env node
// The installed `zona` command. Node 24 runs the TypeScript sources directly (type stripping). An
// older Node cannot even read them and would fail with a stack trace, so this plain JavaScript file
// checks the version first and only then loads the command.
const MINIMUM_NODE_MAJOR = 24;
const major = Number(process.versions.node.split(".")[0]);
if (!(major >= MINIMUM_NODE_MAJOR)) {
  process.stderr.write(
    `zona: Node.js ${MINIMUM_NODE_MAJOR} or newer is needed, this is ${process.version}: ` +
      `run the command as \`npx zona\` in the Zona folder (it uses the Node.js ${MINIMUM_NODE_MAJOR} installed with Zona) or install Node.js ${MINIMUM_NODE_MAJOR}\n`,
  );
  process.exit(1);
}
await import("../src/cli/main.ts");
