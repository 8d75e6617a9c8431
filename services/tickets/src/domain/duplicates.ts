/**
 * A claim or a hold that finds its own twin in flight (a concurrent duplicate holding the capacity it needs) waits
 * for the twin's result, polling, for at most DUPLICATE_WAIT_MS.
 */
export const DUPLICATE_WAIT_MS = 10_000
export const DUPLICATE_POLL_MS = 50

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
