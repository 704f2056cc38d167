// Builds the web chat into dist/web (run by `npm install` through "prepare", and by CI).
import { keep } from "../src/web/server/web-assets.ts";
import { buildWebChat } from "../src/web/server/web-build.ts";

const started = Date.now();
const build = await buildWebChat();
await keep(build);
const sizes = build.assets.map(
  (asset) => `${asset.name} ${asset.body.length} B (${asset.brotli.length} B br)`,
);
console.log(`web chat built in ${Date.now() - started} ms: ${sizes.join(", ")}`);
