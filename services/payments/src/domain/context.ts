/** What the payments domain functions work with: the models, the processors and the service's settings. */
import type { Logger } from 'pino'
import { ContractError } from '@svc/errors'
import type { Environment, PaymentsModels } from '../models'
import type { ProcessorRegistry } from '../processors'

export interface PaymentsDomain {
  models: PaymentsModels
  processors: ProcessorRegistry
  /** the service's DID: payment record AT-URIs are `at://<serviceDid>/money.svc.payment.record/<tid>` */
  serviceDid: string
  /** the checkout host: browser URLs are `${checkoutUrl}/checkout/<browser token>` */
  checkoutUrl: string
  /** derives the status and browser tokens (HMAC-SHA256) */
  tokenSecret: string
  /** an abandoned checkout fails as `expired` this long after initiation */
  checkoutExpirySeconds: number
  logger?: Logger
  /** the clock (tests move it) */
  now?: () => Date
  /** how long a processor call may take before the payment fails with processor_error (default 30 s) */
  processorTimeoutMs?: number
}

export const nowOf = (d: PaymentsDomain): Date => (d.now ? d.now() : new Date())

export function parseEnvironment(value: unknown): Environment {
  if (value === 'test' || value === 'live') return value
  throw new ContractError('InvalidRequest', 'environment must be "test" or "live"')
}

const DID_RE = /^did:[a-z]+:[A-Za-z0-9._:%-]*[A-Za-z0-9._-]$/
const AT_URI_RE = /^at:\/\/(did:[a-z]+:[A-Za-z0-9._:%-]*[A-Za-z0-9._-])\/([a-zA-Z][a-zA-Z0-9-]*(?:\.[a-zA-Z0-9-]+)+)\/([A-Za-z0-9._~:-]{1,512})$/

export function isDid(value: string): boolean {
  return value.length <= 2048 && DID_RE.test(value)
}

/** `at://<did>/<collection NSID>/<record key>`; the parts, or null. */
export function parseAtUri(value: string): { repo: string; collection: string; rkey: string } | null {
  if (value.length > 8192) return null
  const m = AT_URI_RE.exec(value)
  if (!m) return null
  return { repo: m[1]!, collection: m[2]!, rkey: m[3]! }
}

/** Number of user-perceived characters. */
export function graphemes(value: string): number {
  return [...new Intl.Segmenter('en', { granularity: 'grapheme' }).segment(value)].length
}

// eslint-disable-next-line no-control-regex
export const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/
