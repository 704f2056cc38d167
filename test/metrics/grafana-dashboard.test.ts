import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";
import { Scrape } from "./scrape.ts";

interface Target {
  expr?: string;
  datasource?: { type?: string; uid?: string };
}

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos?: { h: number; w: number; x: number; y: number };
  targets?: Target[];
}

interface Dashboard {
  schemaVersion: number;
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: unknown; definition?: string }> };
}

const dashboard = JSON.parse(
  readFileSync(new URL("../../docs/grafana-dashboard.json", import.meta.url), "utf8"),
) as Dashboard;
const panels = dashboard.panels.filter((panel) => panel.type !== "row");

const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset"]);
const HISTOGRAM_SUFFIXES = ["_bucket", "_sum", "_count"];
// Grafana's reference to the dashboard's data source variable (a literal, not a JavaScript template).
const DATASOURCE = { type: "prometheus", uid: ["$", "{datasource}"].join("") };

/** The series names a PromQL expression selects (functions, labels, keywords and numbers left out). */
function seriesNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, "")
    .replace(/\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b/g, "0");
  const names: string[] = [];
  for (const match of bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = match;
    if (name && !call && !KEYWORDS.has(name)) names.push(name);
  }
  return names;
}

describe("the Grafana dashboard in docs/ (Grafana 10+, Prometheus data source variable)", () => {
  let t: TestApp;
  let scrape: Scrape;
  beforeAll(async () => {
    t = await startTestApp();
    const response = await t.fetch("/admin/v1/metrics", {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    scrape = await Scrape.parse(await response.text());
  });
  afterAll(() => t.close());

  /** Whether a name is a series Zona exposes: a family, or a histogram's bucket, sum or count. */
  const exists = (name: string): boolean => {
    const family = scrape.families[name];
    if (family) return family.type !== "histogram";
    const suffix = HISTOGRAM_SUFFIXES.find((end) => name.endsWith(end));
    return suffix !== undefined && scrape.families[name.slice(0, -suffix.length)]?.type === "histogram";
  };

  it("is a Grafana 10+ dashboard with a Prometheus data source variable that every panel uses", () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(38);
    expect(dashboard.uid).toMatch(/^[a-z0-9-]+$/);
    const variable = dashboard.templating.list.find((v) => v.name === "datasource");
    expect(variable).toMatchObject({ type: "datasource", query: "prometheus" });
    expect(new Set(dashboard.panels.map((panel) => panel.id)).size).toBe(dashboard.panels.length);
    expect(panels.length).toBeGreaterThanOrEqual(12);
    for (const panel of panels) {
      expect(panel.gridPos, panel.title).toBeDefined();
      expect(panel.datasource, panel.title).toEqual(DATASOURCE);
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.expr, panel.title).toBeTruthy();
    }
  });

  it("every panel's expressions (and the instance variable's query) name only series Zona exposes", () => {
    const used = new Set<string>();
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        const names = seriesNames(target.expr ?? "");
        expect(names.length, `${panel.title}: ${target.expr}`).toBeGreaterThan(0);
        for (const name of names) {
          expect(exists(name), `${panel.title}: ${name} is not a series of /metrics`).toBe(true);
          used.add(name);
        }
      }
    }
    const instance = dashboard.templating.list.find((v) => v.name === "instance");
    const [, series] = /^label_values\((\w+), *instance\)$/.exec(instance?.definition ?? "") ?? [];
    expect(exists(series ?? ""), `instance variable: ${instance?.definition}`).toBe(true);
    // And the other way round: every zona_ series has a place on the dashboard.
    const shown = new Set([...used].map((name) => name.replace(/_(bucket|sum|count)$/, "")));
    const zona = Object.keys(scrape.families).filter((name) => name.startsWith("zona_"));
    expect(zona.filter((name) => !shown.has(name))).toEqual([]);
  });

  it("the expression reader finds series and skips functions, labels, ranges and numbers", () => {
    expect(
      seriesNames(
        'histogram_quantile(0.99, sum by (le, machine) (rate(a_seconds_bucket{outcome="ok"}[$__rate_interval]))) / b_total * 1e9',
      ),
    ).toEqual(["a_seconds_bucket", "b_total"]);
  });
});
