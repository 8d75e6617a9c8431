import { AtUri, isValidDid, isValidNsid, isValidRecordKey } from '@atproto/syntax'

/** A DID in the AT Protocol's syntax (did:<method>:<identifier>, at most 2 KiB). */
export function isDid(value: unknown): value is string {
  return typeof value === 'string' && isValidDid(value)
}

export interface RecordUri {
  /** the DID of the repository holding the record */
  repo: string
  /** the record's collection NSID */
  collection: string
  rkey: string
}

/** `at://<did>/<collection NSID>/<record key>`: its parts, or null for anything else (handles, bare repos, queries). */
export function parseRecordUri(value: unknown): RecordUri | null {
  if (typeof value !== 'string' || value.length > 8192 || !value.startsWith('at://') || /[?#]/.test(value)) return null
  let uri: AtUri
  try {
    uri = new AtUri(value)
  } catch {
    return null
  }
  const { host: repo, collection, rkey } = uri
  if (uri.toString() !== value) return null
  if (!isValidDid(repo) || !isValidNsid(collection) || !isValidRecordKey(rkey)) return null
  return { repo, collection, rkey }
}

/** The AT-URI of a record. */
export const recordUri = (repo: string, collection: string, rkey: string): string => `at://${repo}/${collection}/${rkey}`

/**
 * A ticket page's token, the buyer's capability for the page of one ticket on the checkout host
 * (`{checkout_url}/checkout/<token>`): `tkp_` + the ticket id's 24 hex characters + `_` + 192 random bits (base64url).
 */
export const TICKET_PAGE_TOKEN_RE = /^tkp_([0-9a-f]{24})_[A-Za-z0-9_-]{32}$/

/** The ticket (`ticket_…`) a page token names, or null when it is not a page token. */
export function ticketIdOfPageToken(token: string): string | null {
  const m = TICKET_PAGE_TOKEN_RE.exec(token)
  return m ? `ticket_${m[1]}` : null
}
