import type { ErrorCode } from '@svc/errors'
import type { DocumentTypeDecoration } from '@svc/graph'
import type { MethodNsid, Methods } from '@svc/lexicons/types'
import type { AuthVerifier } from '../auth/service-auth'

export type Auth = 'app'

/**
 * A method served through the gateway: its auth, GraphQL operation, and the mapping in and out. Its params, input
 * and output are the lexicon's, from the one generated module (`@svc/lexicons/types`) the SDK uses too.
 */
// The table holds methods of different NSIDs and data types; `any` lets each keep its precise ones.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface GatewayMethod<N extends MethodNsid = any, TData = any, TVariables = any> {
  nsid: N
  auth: Auth
  /** the gateway operation: a `graphql(`…`)` document, whose result type is the method's data */
  operation: DocumentTypeDecoration<TData, TVariables>
  /** checks the lexicon cannot express (strict bodies, refused fields); throw ContractError */
  check?: (call: MethodCall<N>) => void
  /** the operation's variables, typed by its document */
  variables: (call: MethodCall<N>) => TVariables
  output: (data: TData, call: MethodCall<N>) => Methods[N]['output']
  /** how a domain error reads in this method's contract (e.g. AppNotRegistered → AppUnauthorized); others pass unchanged */
  errors?: Partial<Record<ErrorCode, ErrorCode>>
}

/** A method, its data and variables types taken from its operation's typed document (and its params, input, output from its NSID). */
export function gatewayMethod<N extends MethodNsid, TData, TVariables>(method: GatewayMethod<N, TData, TVariables>): GatewayMethod<N, TData, TVariables> {
  return method
}

/** A method of the contract whose domain is not built yet: answered 501 MethodNotImplemented. */
export interface PlannedMethod {
  nsid: MethodNsid
  planned: string
}

export type MethodRoute = GatewayMethod | PlannedMethod

/** A call as the method sees it, after the lexicon checks: its params and input have the lexicon's types. */
export interface MethodCall<N extends MethodNsid = MethodNsid> {
  nsid: N
  params: Methods[N]['params']
  /** the JSON body of a procedure; an empty object for a query */
  input: Methods[N]['input'] extends undefined ? Record<string, never> : NonNullable<Methods[N]['input']>
  caller: { kind: 'app'; appDid: string }
}

export interface AuthVerifiers {
  app: AuthVerifier
}

export function isPlanned(route: MethodRoute): route is PlannedMethod {
  return 'planned' in route
}
