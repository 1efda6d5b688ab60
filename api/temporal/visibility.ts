/** Building visibility queries from operator input, quoted so input cannot change the query. */

export function quote(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

export function andQuery(clauses: Array<string | undefined | false>): string {
  return clauses.filter((c): c is string => typeof c === 'string' && c.length > 0).join(' AND ');
}
