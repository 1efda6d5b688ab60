import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registry } from '../../observability/metrics';
import '../../observability/pool-gauges';

describe('docs/grafana-dashboard.json', () => {
  it('queries only metrics runnerflow exposes, by labels they carry', () => {
    const text = readFileSync(resolve(import.meta.dirname, '../../docs/grafana-dashboard.json'), 'utf8');
    const dashboard = JSON.parse(text) as { panels: Array<{ targets: Array<{ expr: string }> }> };
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\b(runnerflow_[a-z_]+)/g)].map((m) => m[1]!.replace(/_(bucket|count|sum)$/, ''))));
    expect(used.size).toBeGreaterThan(10);
    for (const name of used) {
      const metric = registry.getSingleMetric(name);
      expect(metric, `${name} is registered`).toBeDefined();
      const labels = new Set((metric as unknown as { labelNames: string[] }).labelNames);
      for (const e of exprs.filter((x) => x.includes(name))) {
        for (const m of e.matchAll(new RegExp(`${name}(?:_bucket|_count|_sum)?\\{([^}]*)\\}`, 'g'))) {
          for (const label of m[1]!.split(',').map((kv) => kv.split(/[=!~]/)[0]!.trim()).filter((l) => l && l !== 'le')) {
            expect(labels.has(label), `${name} has label ${label}`).toBe(true);
          }
        }
      }
    }
  });
});
