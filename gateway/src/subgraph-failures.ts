/**
 * A subgraph the gateway could not ask: refused, reset, too slow (SUBGRAPH_TIMEOUT_MS), or answering something other
 * than GraphQL. Mercurius passes on the transport's own error (`Headers Timeout Error`, `connect ECONNREFUSED …`, a
 * JSON parse error quoting the answer) without a code, which its callers would answer 500. Each such failure is
 * answered ServiceUnavailable instead, the same as a gateway that cannot be reached: the caller retries with backoff.
 * A subgraph's own GraphQL errors (plain objects from its answer, coded by the subgraph) pass through unchanged.
 */
import mercuriusGateway from '@mercuriusjs/gateway'
import { GraphQLError, type ExecutionResult } from 'graphql'
import { types } from 'node:util'
import type { MercuriusContext, MercuriusCommonOptions } from 'mercurius'
import { contractExtensions } from '@svc/errors'

type ErrorFormatter = NonNullable<MercuriusCommonOptions['errorFormatter']>

// exported by the package at run time, not declared in its types
const { defaultErrorFormatter } = mercuriusGateway as unknown as { defaultErrorFormatter: ErrorFormatter }

const UNAVAILABLE = 'a domain service is temporarily unavailable; retry with backoff'

/**
 * a request to a subgraph that failed before a GraphQL answer: an Error object, not one of the answer's errors
 * (isNativeError: node's socket errors come from its own realm, where `instanceof Error` can be false)
 */
function isTransportFailure(err: unknown): err is Error {
  return (types.isNativeError(err) || err instanceof Error) && !(err instanceof GraphQLError)
}

/** the federated errors mercurius collected for one subgraph request, when `error` carries them */
function federatedErrors(error: GraphQLError): unknown[] | undefined {
  const errors = (error.extensions as { errors?: unknown } | undefined)?.errors
  return Array.isArray(errors) ? errors : undefined
}

export const formatGatewayErrors: ErrorFormatter = (execution, context) => {
  const log = (context as MercuriusContext).reply?.log
  const errors = execution.errors.map((error) => {
    const nested = federatedErrors(error)
    if (!nested?.some(isTransportFailure)) return error
    const mapped = nested.map((err) => {
      if (!isTransportFailure(err)) return err
      log?.warn({ err: { message: err.message, code: (err as { code?: unknown }).code } }, 'subgraph unavailable')
      return new GraphQLError(UNAVAILABLE, { path: error.path, extensions: contractExtensions('ServiceUnavailable') })
    })
    return new GraphQLError(error.message, { path: error.path, originalError: error.originalError, extensions: { ...error.extensions, errors: mapped } })
  })
  return defaultErrorFormatter({ ...execution, errors } as ExecutionResult & { errors: GraphQLError[] }, context)
}
