import type { ErrorCode } from '@svc/errors'
import type { AuthVerifier } from '../auth/service-auth'

export type Auth = 'app'

/** A method served through the gateway: its auth, GraphQL operation, and the mapping in and out. */
// The table holds methods of different data types; `any` lets each keep its precise one (output is contravariant).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface GatewayMethod<TData = any> {
  nsid: string
  auth: Auth
  /** the gateway operation */
  operation: string
  /** checks the lexicon cannot express (strict bodies, refused fields); throw ContractError */
  check?: (call: MethodCall) => void
  variables: (call: MethodCall) => Record<string, unknown>
  output: (data: TData, call: MethodCall) => unknown
  /** how a domain error reads in this method's contract (e.g. AppNotRegistered → AppUnauthorized); others pass unchanged */
  errors?: Partial<Record<ErrorCode, ErrorCode>>
}

/** A method of the contract whose domain is not built yet: answered 501 MethodNotImplemented. */
export interface PlannedMethod {
  nsid: string
  planned: string
}

export type MethodRoute = GatewayMethod | PlannedMethod

export interface MethodCall {
  nsid: string
  params: Record<string, unknown>
  input: Record<string, unknown>
  caller: { kind: 'app'; appDid: string }
}

export interface AuthVerifiers {
  app: AuthVerifier
}

export function isPlanned(route: MethodRoute): route is PlannedMethod {
  return 'planned' in route
}
