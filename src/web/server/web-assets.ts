import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildWebChat, contentTypeOf, sourceHash, type WebAsset, type WebBuild } from "./web-build.ts";

/** Where a build is kept between starts (made by `npm install`, refreshed at start when stale). */
export const BUILD_DIR = fileURLToPath(new URL("../../../dist/web/", import.meta.url));

interface Manifest {
  sourceHash: string;
  script: string;
  preload: string[];
  style: string;
  icon: string;
  files: string[];
}

let loading: Promise<WebBuild> | undefined;

/**
 * The web chat's files, read once per process: from dist/web when it was built from the sources
 * as they are now, otherwise built again (and kept in dist/web for the next start).
 */
export function webAssets(): Promise<WebBuild> {
  loading ??= load().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

async function load(): Promise<WebBuild> {
  const wanted = await sourceHash();
  const kept = await readKept(wanted);
  if (kept) return kept;
  const built = await buildWebChat();
  await keep(built).catch(() => {
    // A read-only installation serves the build from memory; the next start builds again.
  });
  return built;
}

/** Writes a build to dist/web: the files first, the manifest last, each by rename (several processes may build at once). */
export async function keep(build: WebBuild): Promise<void> {
  const assetsDir = path.join(BUILD_DIR, "assets");
  await mkdir(assetsDir, { recursive: true });
  for (const asset of build.assets) {
    await writeAtomically(path.join(assetsDir, asset.name), asset.body);
    await writeAtomically(path.join(assetsDir, `${asset.name}.gz`), asset.gzip);
    await writeAtomically(path.join(assetsDir, `${asset.name}.br`), asset.brotli);
  }
  const manifest: Manifest = {
    sourceHash: build.sourceHash,
    script: build.script,
    preload: build.preload,
    style: build.style,
    icon: build.icon,
    files: build.assets.map((asset) => asset.name),
  };
  await writeAtomically(path.join(BUILD_DIR, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
}

async function writeAtomically(file: string, body: Buffer | string): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, body);
  await rename(temporary, file);
}

async function readKept(wanted: string): Promise<WebBuild | undefined> {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(path.join(BUILD_DIR, "manifest.json"), "utf8")) as Manifest;
  } catch {
    return undefined;
  }
  if (manifest.sourceHash !== wanted) return undefined;
  try {
    const assets: WebAsset[] = [];
    for (const name of manifest.files) {
      const file = path.join(BUILD_DIR, "assets", name);
      const [body, gzip, brotli] = await Promise.all([
        readFile(file),
        readFile(`${file}.gz`),
        readFile(`${file}.br`),
      ]);
      assets.push({ name, type: contentTypeOf(name), body, gzip, brotli });
    }
    return { ...manifest, assets };
  } catch {
    return undefined;
  }
}
