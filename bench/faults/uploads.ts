// Many large document uploads at once, at full size: `npm run faults:uploads`.
// UPLOADS (50) documents of UPLOAD_MB (40) MB each, sent at the same time by USERS (6) signed-in
// users, to one embedded Zona (a fresh data folder); while they are received and read, /healthz and
// another user's list of conversations are asked every 250 ms and Zona's resident memory is sampled.
// With DATABASE_URL and REDIS_URL set it runs distributed against them (a fresh database).
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { signedInAppUser } from "../../test/faults/crash-setup.ts";
import { probeProcess } from "../../test/faults/probe-in-process.ts";
import { percentile, startFaultInstallation } from "./fault-installation.ts";

const uploads = Number(process.env.UPLOADS ?? 50);
const megabytes = Number(process.env.UPLOAD_MB ?? 40);
const userCount = Number(process.env.USERS ?? 6);

/** A PDF of one page of text that carries `size` bytes of incompressible data in an unused stream. */
function bulkyPdf(size: number): Buffer {
  const text = "BT /F1 12 Tf 72 720 Td (A lighthouse keeper's report) Tj ET";
  const bulk = randomBytes(size);
  const objects = [
    Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
    Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
    Buffer.from(
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    ),
    Buffer.from(`<< /Length ${text.length} >>\nstream\n${text}\nendstream`),
    Buffer.from("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
    Buffer.concat([Buffer.from(`<< /Length ${bulk.length} >>\nstream\n`), bulk, Buffer.from("\nendstream")]),
  ];
  const parts: Buffer[] = [Buffer.from("%PDF-1.4\n")];
  const offsets: number[] = [];
  let at = 9;
  objects.forEach((body, i) => {
    const object = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from("\nendobj\n")]);
    offsets.push(at);
    parts.push(object);
    at += object.length;
  });
  parts.push(
    Buffer.from(
      [
        `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`,
        ...offsets.map((offset) => `${String(offset).padStart(10, "0")} 00000 n \n`),
        `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${at}\n%%EOF\n`,
      ].join(""),
    ),
  );
  return Buffer.concat(parts);
}

async function main(): Promise<void> {
  const { setup, distributed, close } = await startFaultInstallation("uploads");
  const url = setup.zona.url;
  const pid = setup.zona.pid as number;
  const rss = async () =>
    Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN) / 1024;
  try {
    const app = (token: string, path: string, init: RequestInit = {}) =>
      fetch(`${url}/api/v1${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
      });
    const users = await Promise.all(Array.from({ length: userCount }, () => signedInAppUser(setup)));
    const bystander = await signedInAppUser(setup);
    const bases = await Promise.all(
      users.map(async (token) => {
        const made = await app(token, "/rag/kb", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name: "Uploads" }),
        });
        return ((await made.json()) as { slug: string }).slug;
      }),
    );
    const file = bulkyPdf(megabytes * 1024 * 1024);
    await (await app(bystander, "/chat/sessions")).arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const idle = await rss();

    let running = true;
    let peak = idle;
    const health = probeProcess(`${url}/healthz`);
    const lists = probeProcess(`${url}/api/v1/chat/sessions`, `Bearer ${bystander}`);
    const sampling = (async () => {
      while (running) {
        peak = Math.max(peak, await rss());
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: uploads }, async (_, i) => {
        const owner = i % users.length;
        const form = new FormData();
        form.append("file", new Blob([file]), `report-${i}.pdf`);
        const sent = performance.now();
        const answer = await app(users[owner] as string, `/rag/kb/${bases[owner]}/docs`, {
          method: "POST",
          body: form,
        });
        await answer.arrayBuffer();
        return { status: answer.status, ms: performance.now() - sent };
      }),
    );
    const answeredMs = performance.now() - started;
    for (;;) {
      const states = await Promise.all(
        users.map(async (token, owner) => {
          const list = (await (await app(token, `/rag/kb/${bases[owner]}/docs`)).json()) as {
            data: Array<{ status: string }>;
          };
          return list.data.map((document) => document.status);
        }),
      );
      if (states.flat().every((status) => status === "ready" || status === "failed")) break;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    const readMs = performance.now() - started;
    running = false;
    await sampling;
    const [healthWaits, listWaits] = await Promise.all([health.stop(), lists.stop()]);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const after = await rss();
    const statuses: Record<string, number> = {};
    for (const answer of answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    const times = answers.filter((answer) => answer.status === 202).map((answer) => answer.ms);
    console.log(
      [
        `${distributed ? "distributed" : "embedded"}: ${uploads} uploads of ${megabytes} MB from ${userCount} users at once`,
        `  answers ${JSON.stringify(statuses)}; 202 answered in p50 ${(percentile(times, 0.5) / 1000).toFixed(1)} s, max ${(Math.max(...times) / 1000).toFixed(1)} s; all answered after ${(answeredMs / 1000).toFixed(1)} s; all read after ${(readMs / 1000).toFixed(1)} s`,
        `  Zona RSS: idle ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB (+${(peak - idle).toFixed(0)}), after ${after.toFixed(0)} MB (+${(after - idle).toFixed(0)})`,
        `  /healthz: p50 ${percentile(healthWaits, 0.5).toFixed(1)} ms, p99 ${percentile(healthWaits, 0.99).toFixed(1)} ms, max ${Math.max(...healthWaits).toFixed(1)} ms (${healthWaits.length} probes)`,
        `  another user's GET /api/v1/chat/sessions: p50 ${percentile(listWaits, 0.5).toFixed(1)} ms, p99 ${percentile(listWaits, 0.99).toFixed(1)} ms, max ${Math.max(...listWaits).toFixed(1)} ms (${listWaits.length} probes)`,
      ].join("\n"),
    );
  } finally {
    await close();
  }
}

await main();
