/**
 * A datetime as the contract writes them: ISO 8601 with a time zone (`Z` or an offset). `new Date()` takes far more
 * (a bare year, "March 1 2026", 2026-02-30 rolled over to March 2) and reads a datetime without a zone in the
 * process's own time zone, so one input would mean another instant on a machine with another TZ.
 */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/

/** The date and hour as written exist (Date.parse rolls 2026-02-30 over to March 2 and takes hour 24 as the next day). */
function isCalendarDate(value: string): boolean {
  const [year, month, day, hour] = [value.slice(0, 4), value.slice(5, 7), value.slice(8, 10), value.slice(11, 13)].map(Number) as [number, number, number, number]
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day && hour <= 23
}

/** The instant of an ISO 8601 datetime with a time zone, or null for anything else. */
export function parseZonedDateTime(value: unknown): Date | null {
  if (typeof value !== 'string' || !ISO_DATE_TIME.test(value) || !isCalendarDate(value)) return null
  const t = Date.parse(value)
  return Number.isNaN(t) ? null : new Date(t)
}
