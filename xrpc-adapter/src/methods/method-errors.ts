/**
 * The errors an XRPC method answers: those its lexicon declares (`errors` of its main def), plus those the pipeline
 * answers for any method (bad input, credentials, limits, availability; docs/errors.md). A handler's error outside
 * both is a lexicon out of step with the code: the adapter logs it, and the end-to-end tests fail on it.
 */
import type { ErrorCode } from '@svc/errors'
import { lexicons } from '@svc/lexicons'

export const COMMON_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'InvalidRequest',
  'AuthMissing',
  'BadJwt',
  'BadJwtSignature',
  'BadJwtAudience',
  'BadJwtLexiconMethod',
  'JwtExpired',
  'JwtLifetimeTooLong',
  'JwtReplayed',
  'UnresolvableIssuer',
  'ApiKeyNotAccepted',
  'WebhookSecretNotAccepted',
  'PayloadTooLarge',
  'RateLimitExceeded',
  'InternalServerError',
  'MethodNotImplemented',
  'ServiceUnavailable',
])

/** The error names the NSID's lexicon declares; none for an NSID without a method lexicon. */
export function declaredErrors(nsid: string): string[] {
  try {
    const def = lexicons.getDef(nsid) as { errors?: { name: string }[] } | undefined
    return (def?.errors ?? []).map((e) => e.name)
  } catch {
    return []
  }
}

/** Whether `code` is an error the method may answer. */
export function answersError(nsid: string, code: string): boolean {
  return COMMON_ERRORS.has(code as ErrorCode) || declaredErrors(nsid).includes(code)
}
