import { describe, expect, it } from "vitest";
import { MachineStats } from "../../src/engines/machine-stats.ts";

const MINUTE = 60_000;

describe("Machine statistics (p50/p99 latency of the last minutes, in bounded memory)", () => {
  it("p50 and p99 are nearest-rank percentiles of the answers of the last 5 minutes", () => {
    const stats = new MachineStats();
    const start = 100 * MINUTE;
    for (let ms = 1; ms <= 100; ms++) stats.success(ms, start + (ms % 5) * MINUTE);
    expect(stats.latency(start + 4 * MINUTE)).toEqual({ p50: 50, p99: 99, samples: 100 });
  });

  it.each([
    { rule: "samples older than 5 minutes are forgotten", at: 105, samples: 80 },
    { rule: "a minute with no answers in the window counts nothing", at: 109, samples: 0 },
  ])("$rule", ({ at, samples }) => {
    const stats = new MachineStats();
    for (let minute = 100; minute < 105; minute++) {
      for (let i = 0; i < 20; i++) stats.success(10, minute * MINUTE + i);
    }
    expect(stats.latency(at * MINUTE).samples).toBe(samples);
  });

  it("memory stays bounded: a busy minute keeps its latest samples only", () => {
    const stats = new MachineStats();
    for (let i = 0; i < 5_000; i++) stats.success(i < 4_000 ? 1 : 1_000, MINUTE);
    const latency = stats.latency(MINUTE);
    expect(latency.samples).toBe(1024);
    expect(latency.p50).toBe(1_000);
  });

  it("no answers: percentiles are null", () => {
    expect(new MachineStats().latency(Date.now())).toEqual({ p50: null, p99: null, samples: 0 });
  });

  it("the last error keeps at most 200 characters; a probe failure marks the machine down until it answers", () => {
    const stats = new MachineStats();
    stats.failure({ kind: "status", status: 500, message: "x".repeat(500) }, 1);
    expect(stats.lastError).toMatchObject({ source: "request", kind: "status", status: 500, at: 1 });
    expect(stats.lastError?.message).toHaveLength(200);
    stats.probeDown({ kind: "connect", message: "refused" }, 2);
    expect(stats.down).toBe(true);
    stats.probeUp();
    expect(stats.down).toBe(false);
    stats.probeDown({ kind: "connect", message: "refused" }, 3);
    stats.success(5, 4);
    expect(stats.down).toBe(false);
    expect(stats.lastSuccessAt).toBe(4);
  });
});
