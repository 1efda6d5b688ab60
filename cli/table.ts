/** Plain aligned columns, the way kubectl and docker print lists. */
export function formatTable(headers: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = [headers.map(String), ...rows.map((row) => row.map(cell))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

/** `key: value` lines with the values aligned. */
export function formatFields(fields: readonly (readonly [string, unknown])[]): string {
  const width = Math.max(...fields.map(([k]) => k.length)) + 1;
  return fields.map(([k, v]) => `${`${k}:`.padEnd(width)} ${cell(v)}`).join('\n');
}

function cell(value: unknown): string {
  if (value === undefined || value === null || value === '') return '-';
  if (Array.isArray(value)) return value.map(cell).join(',');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}
