import { ContractError, statusOf, type ErrorCode } from '@svc/errors'
import type { GatewayDocument } from '@svc/gateway-client'
import type { MethodNsid, Methods } from '@svc/lexicons/types'
import type { AssertionCheck, VerifiedAssertion } from '../auth/assertion'
import type { AppCaller, AuthVerifier } from '../auth/service-auth'

/**
 * What a handler gets, after the lexicon checks and its auth verifier: params and input typed by the method's lexicon
 * (the one generated module, `@svc/lexicons/types`, that the SDK uses too), the verified caller, and the gateway as
 * that caller with the request's id (a `graphql(`…`)` document types its result and variables).
 */
export interface HandlerContext<N extends MethodNsid> {
  nsid: N
  params: Methods[N]['params']
  /** the JSON body of a procedure; an empty object for a query */
  input: Methods[N]['input'] extends undefined ? Record<string, never> : NonNullable<Methods[N]['input']>
  caller: AppCaller
  graph<TResult, TVariables>(document: GatewayDocument<TResult, TVariables>, variables: TVariables): Promise<TResult>
  /** verifies a buyer's or organizer's assertion carried in the body, for this method (auth/assertion.ts) */
  assertion(jwt: string | undefined, check: Omit<AssertionCheck, 'nsid'>): Promise<VerifiedAssertion>
}

/** One handler per NSID, a plain function: read the call, ask the graph, answer the lexicon's output. */
export type Handler<N extends MethodNsid> = (ctx: HandlerContext<N>) => Promise<Methods[N]['output']>

/** A served method: its NSID, the auth verifier it is registered with, and its handler. */
// The table holds methods of different NSIDs; `any` lets each keep its precise types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface XrpcMethod<N extends MethodNsid = any> {
  nsid: N
  auth: AuthVerifier
  handler: Handler<N>
}

/** A method of the contract whose domain is not built yet: answered 501 MethodNotImplemented. */
export interface PlannedMethod {
  nsid: MethodNsid
  planned: string
}

export type MethodRoute = XrpcMethod | PlannedMethod

/** The routing table: NSID → route. */
export type MethodTable = ReadonlyMap<string, MethodRoute>

export interface AuthVerifiers {
  app: AuthVerifier
}

/** A route of the table; the handler must be the NSID's. */
export function xrpcMethod<N extends MethodNsid>(nsid: N, opts: { auth: AuthVerifier; handler: Handler<N> }): XrpcMethod<N> {
  return { nsid, ...opts }
}

/** For `.catch(...)` on a graph call: a domain error the method's contract calls differently leaves under that name. */
export function renameErrors(names: Partial<Record<ErrorCode, ErrorCode>>): (err: unknown) => never {
  return (err) => {
    const renamed = err instanceof ContractError ? names[err.code] : undefined
    throw renamed ? new ContractError(renamed, err instanceof Error ? err.message : renamed) : err
  }
}

/**
 * For `.catch(...)` on a graph call that an assertion authorized: a refusal for its input (any 4xx) did nothing, so
 * the assertion's `jti` is given back and the corrected request may carry it. Not after a 5xx: the call may have
 * done its work, and its retry carries the assertion in the same scope.
 */
export function releaseOnRefusal(spent: Pick<VerifiedAssertion, 'release'>): (err: unknown) => Promise<never> {
  return async (err) => {
    if (err instanceof ContractError && statusOf(err.code) < 500) await spent.release()
    throw err
  }
}
