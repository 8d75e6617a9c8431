/** MongoDB's (and FerretDB's) duplicate-key error: a unique index refused the write. */
export function isDuplicateKeyError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000
}
