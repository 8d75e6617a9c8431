/**
 * Buyer and organizer assertions: a JWT of the service-auth format carried in the body (`iss` = the person's DID,
 * `aud` = this service, `lxm` = the method), verified like the app's own token. Every refusal, whatever its cause
 * (absent, malformed, expired, wrong signer, replayed), is the method's own error code; a lookup that failed for now
 * is 503, as for the app's token.
 */
import { ContractError, type ErrorCode } from '@svc/errors'
import type { ServiceAuthVerifier } from '@svc/service-auth'
import { isRedisUnavailable } from '@svc/operations'

export interface AssertionCheck {
  nsid: string
  /** the DID the assertion must be issued by */
  iss: string
  /** the contract's error for this method's assertion (BuyerAssertionInvalid, OrganizerAssertionInvalid) */
  code: ErrorCode
  /** an idempotent request's scope: its retry may carry the same assertion (its `jti` is then accepted again) */
  replayScope?: string
}

/** A verified assertion. */
export interface VerifiedAssertion {
  /**
   * Its request was refused for its input and did nothing: the assertion is not spent, so the corrected request may
   * carry it. Nothing happens unless this request spent it (not a retry's) in a replay scope.
   */
  release(): Promise<void>
}

export type AssertionVerifier = (jwt: string | undefined, check: AssertionCheck) => Promise<VerifiedAssertion>

const KEPT: VerifiedAssertion = { release: async () => undefined }

export function assertionVerifier(verifier: ServiceAuthVerifier): AssertionVerifier {
  return async (jwt, { nsid, iss, code, replayScope }) => {
    if (jwt === undefined || jwt === '') throw new ContractError(code, 'the assertion is required')
    // the issuer is checked first, so a request naming the wrong person does not spend the person's assertion
    const verified = await verifier.verify(`Bearer ${jwt}`, nsid, { replayScope, issuer: iss }).catch((err: unknown) => {
      // Redis away (the replay check counts there), or the issuer's DID document not fetched for now (its directory or
      // host failing: ServiceUnavailable, 503), is the service's failure, which a retry passes: not the assertion's
      if (isRedisUnavailable(err)) throw err
      if (err instanceof ContractError && err.code === 'ServiceUnavailable') throw err
      throw new ContractError(code, `the assertion is invalid (${err instanceof ContractError ? `${err.code}: ${err.message}` : 'unverifiable'})`)
    })
    if (replayScope === undefined || !verified.firstUse) return KEPT
    return { release: () => verifier.releaseReplay(verified, replayScope) }
  }
}
