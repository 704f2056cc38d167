import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, gzipSync, constants as zlib } from "node:zlib";

/** Where the web chat's sources are (browser code, built by esbuild). */
export const CLIENT_DIR = fileURLToPath(new URL("../client/", import.meta.url));
const ROOT_DIR = fileURLToPath(new URL("../../../", import.meta.url));

/** One built file of the web chat, ready to serve. */
export interface WebAsset {
  /** The file name under /assets/, with its content hash. */
  name: string;
  type: string;
  body: Buffer;
  gzip: Buffer;
  brotli: Buffer;
}

/** What a build makes: the hashed files and the entry points the page links. */
export interface WebBuild {
  /** Hash of everything the build read: the sources and the front-end packages' versions. */
  sourceHash: string;
  script: string;
  /** Chunks the script imports at once: the page preloads them beside it. */
  preload: string[];
  style: string;
  icon: string;
  assets: WebAsset[];
}

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".map": "application/json; charset=utf-8",
};

/** The Content-Type of a built file, by its extension. */
export function contentTypeOf(name: string): string {
  return TYPES[path.extname(name)] ?? "application/octet-stream";
}

/** Hashes the client sources, this build script and the versions of the packages bundled with them. */
export async function sourceHash(): Promise<string> {
  const hash = createHash("sha256");
  const files = (await readdir(CLIENT_DIR, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
  for (const file of files) {
    hash.update(path.relative(CLIENT_DIR, file));
    hash.update(await readFile(file));
  }
  // How the build is made counts too: a change of its options or of the manifest's shape builds again.
  hash.update(await readFile(fileURLToPath(import.meta.url)));
  for (const name of ["preact", "marked", "dompurify", "highlight.js", "esbuild"]) {
    hash.update(`${name}@${await packageVersion(name)}`);
  }
  return hash.digest("hex").slice(0, 32);
}

async function packageVersion(name: string): Promise<string> {
  try {
    const text = await readFile(path.join(ROOT_DIR, "node_modules", name, "package.json"), "utf8");
    return (JSON.parse(text) as { version?: string }).version ?? "?";
  } catch {
    return "missing";
  }
}

/**
 * Bundles the web chat with esbuild: one minified ES module and one style sheet, named by their
 * content hash so they can be cached for a year. Runs at `npm install` (scripts/build-web.ts) and,
 * when the sources changed since, at start (web-assets.ts).
 */
export async function buildWebChat(): Promise<WebBuild> {
  const hashBefore = await sourceHash();
  const esbuild = await import("esbuild");
  const result = await esbuild.build({
    absWorkingDir: ROOT_DIR,
    entryPoints: { app: path.join(CLIENT_DIR, "main.tsx") },
    bundle: true,
    format: "esm",
    // highlight.js is a chunk of its own, fetched by the first answer with a code block.
    splitting: true,
    chunkNames: "[name]-[hash]",
    minify: true,
    sourcemap: false,
    target: ["chrome115", "firefox115", "safari16"],
    jsx: "automatic",
    jsxImportSource: "preact",
    loader: { ".svg": "file" },
    entryNames: "[name]-[hash]",
    assetNames: "[name]-[hash]",
    outdir: "/assets",
    publicPath: "/assets",
    write: false,
    metafile: true,
    legalComments: "none",
    logLevel: "silent",
    tsconfig: path.join(CLIENT_DIR, "tsconfig.json"),
  });
  const assets = result.outputFiles.map((file) =>
    asset(path.basename(file.path), Buffer.from(file.contents)),
  );
  const icon = await readFile(path.join(CLIENT_DIR, "icon.svg"));
  const iconAsset = asset(`icon-${createHash("sha256").update(icon).digest("hex").slice(0, 8)}.svg`, icon);
  assets.push(iconAsset);
  const named = (extension: string) => {
    const found = assets.find((a) => a.name.startsWith("app-") && a.name.endsWith(extension));
    if (!found) throw new Error(`the web chat's build made no ${extension} file`);
    return found.name;
  };
  const script = named(".js");
  const entry = Object.entries(result.metafile.outputs).find(([file]) => path.basename(file) === script)?.[1];
  const preload = (entry?.imports ?? [])
    .filter((imported) => imported.kind === "import-statement")
    .map((imported) => path.basename(imported.path));
  return { sourceHash: hashBefore, script, preload, style: named(".css"), icon: iconAsset.name, assets };
}

/** A file with its compressed forms, made once so no request compresses anything. */
export function asset(name: string, body: Buffer): WebAsset {
  return {
    name,
    type: contentTypeOf(name),
    body,
    gzip: gzipSync(body, { level: 9 }),
    brotli: brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }),
  };
}
