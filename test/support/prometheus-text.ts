/**
 * Reading a Prometheus text exposition in tests. parse-prometheus-text-format
 * validates the whole text (it throws on a malformed line) and gives each
 * family's type; it folds the samples of a labelled histogram into one and drops
 * their labels, so samples are read here line by line against those families.
 */
import parse from 'parse-prometheus-text-format';

export interface Sample {
  /** The line's own name: `x_bucket`, `x_count`, `x_sum` for a histogram `x`. */
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface MetricFamily {
  name: string;
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  samples: Sample[];
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;

function parseLabels(text: string | undefined, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (!text) return labels;
  LABEL.lastIndex = 0;
  let consumed = 0;
  for (let m = LABEL.exec(text); m; m = LABEL.exec(text)) {
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    consumed = LABEL.lastIndex;
  }
  if (consumed !== text.length) throw new Error(`malformed labels in: ${line}`);
  return labels;
}

function familyOf(sampleName: string, families: Map<string, MetricFamily>): MetricFamily | undefined {
  const direct = families.get(sampleName);
  if (direct) return direct;
  const base = sampleName.replace(/_(bucket|count|sum)$/, '');
  const family = families.get(base);
  return family && (family.type === 'HISTOGRAM' || family.type === 'SUMMARY') ? family : undefined;
}

export function parsePrometheus(text: string): Map<string, MetricFamily> {
  const declared = (parse as (t: string) => Array<{ name: string; type: MetricFamily['type'] }>)(text);
  const families = new Map(declared.map((f) => [f.name, { name: f.name, type: f.type, samples: [] as Sample[] }]));
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = SAMPLE_LINE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const family = familyOf(m[1]!, families);
    if (!family) throw new Error(`sample of an undeclared family: ${line}`);
    family.samples.push({ name: m[1]!, labels: parseLabels(m[2], line), value: Number(m[3]) });
  }
  return families;
}

export async function scrape(url: string): Promise<Map<string, MetricFamily>> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`);
  return parsePrometheus(await res.text());
}

/**
 * Sum of a family's values over samples whose labels include `labels`: for a
 * histogram, the sum of its `_count` samples (how many observations).
 */
export function sampleSum(family: MetricFamily | undefined, labels: Record<string, string>): number {
  if (!family) return 0;
  const counted = family.type === 'HISTOGRAM' ? family.samples.filter((s) => s.name === `${family.name}_count`) : family.samples;
  return counted.filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
}

/** Label names a family's samples carry (`le` and `quantile` belong to the format, not the metric). */
export function labelNames(family: MetricFamily): Set<string> {
  const names = new Set<string>();
  for (const s of family.samples) for (const k of Object.keys(s.labels)) if (k !== 'le' && k !== 'quantile') names.add(k);
  return names;
}
