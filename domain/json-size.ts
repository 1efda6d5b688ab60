/**
 * A value's size as the server counts it against its 2 MB payload limit: its JSON in UTF-8
 * bytes. String length counts UTF-16 units, and a label of non-ASCII characters takes up to
 * three bytes a character.
 */
export const jsonBytes = (value: unknown): number => new TextEncoder().encode(JSON.stringify(value) ?? '').length;
