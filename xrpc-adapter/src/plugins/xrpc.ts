/**
 * `/xrpc/{nsid}`: GET for queries, POST for procedures. In order: unknown or retired NSID → 501;
 * wrong verb → 400; params and body validated against the lexicon → 400 InvalidRequest naming the
 * field; planned method → 501; the auth verifier the method was registered with; its handler (a plain function:
 * its own checks, one gateway operation, the answer mapped; the domain that serves it gathers every fact it decides
 * on and makes every change it needs); the output checked against the lexicon.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ContractError, type ErrorCode } from '@svc/errors'
import { lexicons, RETIRED_NSIDS } from '@svc/lexicons'
import type { GatewayClient, GatewayDocument } from '@svc/gateway-client'
import type { HandlerContext, MethodTable } from '../methods'
import type { AssertionVerifier } from '../auth/assertion'
import type { Limiter } from './rate-limit'

export interface XrpcPluginOptions {
  methods: MethodTable
  gateway: GatewayClient
  /** the per app and environment rate limit, checked once the app is verified */
  limit: Limiter
  /** buyer and organizer assertions, for the handlers that take one */
  assertions: AssertionVerifier
}

/**
 * The environment a call acts in, for its rate limit: its `environment` parameter or field, else the environment
 * of the checkout status token it carries (`pst_test_…`), else none.
 */
export function callEnvironment(params: Record<string, unknown>, input: Record<string, unknown>): string {
  const named = params.environment ?? input.environment
  if (typeof named === 'string') return named
  const token = params.token ?? input.token
  return (typeof token === 'string' && /^[a-z]+_(test|live)_/.exec(token)?.[1]) || 'none'
}

function lexiconMethod(nsid: string) {
  try {
    const def = lexicons.getDef(nsid)
    return def && (def.type === 'query' || def.type === 'procedure') ? def : undefined
  } catch {
    return undefined
  }
}

type ParamDef = { type: string; items?: { type: string } }
type MethodDef = { parameters?: { properties?: Record<string, ParamDef> } }

function decodeOne(name: string, type: string, raw: string): unknown {
  switch (type) {
    case 'integer': {
      if (!/^-?\d+$/.test(raw)) throw new ContractError('InvalidRequest', `${name} must be an integer`)
      return Number(raw)
    }
    case 'boolean':
      if (raw !== 'true' && raw !== 'false') throw new ContractError('InvalidRequest', `${name} must be true or false`)
      return raw === 'true'
    default:
      return raw
  }
}

/** Query-string values decoded by the lexicon's parameter types, strictly (atproto's decoder turns "abc" into 0). */
function decodeParams(def: MethodDef, query: Record<string, string | string[] | undefined>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  const props = def.parameters?.properties ?? {}
  for (const [name, raw] of Object.entries(query)) {
    const prop = props[name]
    if (!prop || raw === undefined) continue // unknown parameters are ignored, as atproto does
    const values = Array.isArray(raw) ? raw : [raw]
    if (prop.type === 'array') {
      out[name] = values.map((v) => decodeOne(name, prop.items?.type ?? 'string', v))
    } else {
      if (values.length > 1) throw new ContractError('InvalidRequest', `${name} must be given once`)
      out[name] = decodeOne(name, prop.type, values[0] as string)
    }
  }
  return out
}

function validation<T>(fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    throw new ContractError('InvalidRequest', err instanceof Error ? err.message : 'invalid request')
  }
}

export async function xrpcPlugin(app: FastifyInstance, opts: XrpcPluginOptions) {
  const handle = async (request: FastifyRequest<{ Params: { nsid: string } }>, reply: FastifyReply) => {
    const { nsid } = request.params
    const def = lexiconMethod(nsid)
    if (!def) throw new ContractError('MethodNotImplemented', `method not implemented: ${nsid}`)
    if (RETIRED_NSIDS.has(nsid)) throw new ContractError('MethodNotImplemented', `${nsid} is retired and no longer served`)

    const expected = def.type === 'query' ? 'GET' : 'POST'
    if (request.method !== expected && !(expected === 'GET' && request.method === 'HEAD')) {
      throw new ContractError('InvalidRequest', `incorrect HTTP method (${request.method}): ${nsid} expects ${expected}`)
    }

    const params = validation(() => {
      const decoded = decodeParams(def, request.query as Record<string, string | string[]>)
      lexicons.assertValidXrpcParams(nsid, decoded)
      return decoded
    })
    let input: Record<string, unknown> = {}
    if (def.type === 'procedure' && def.input) {
      if (request.body === undefined || request.body === null) throw new ContractError('InvalidRequest', 'a JSON request body is required')
      input = validation(() => lexicons.assertValidXrpcInput(nsid, request.body) as Record<string, unknown>)
    }

    const route = opts.methods.get(nsid)
    if (!route || 'planned' in route) {
      throw new ContractError('MethodNotImplemented', `${nsid} is not available yet${route ? ` (${route.planned})` : ''}`)
    }

    const caller = await route.auth(request.headers.authorization, nsid)
    request.log = request.log.child({ appDid: caller.appDid, nsid })
    await opts.limit(request, reply, `${caller.appDid}:${callEnvironment(params, input)}`)
    const as = { principal: caller, requestId: request.id, log: request.log }
    // the lexicon checks above are what make params and input the method's generated types
    const ctx = {
      nsid: route.nsid,
      params,
      input,
      caller,
      graph: <TResult, TVariables>(document: GatewayDocument<TResult, TVariables>, variables: TVariables) => opts.gateway.query(document, variables, as),
      assertion: (jwt: string | undefined, check: { iss: string; code: ErrorCode; replayScope?: string }) => opts.assertions(jwt, { ...check, nsid }),
    } as unknown as HandlerContext<typeof route.nsid>
    const output: unknown = await route.handler(ctx)
    try {
      lexicons.assertValidXrpcOutput(nsid, output)
    } catch (err) {
      request.log.error({ err }, 'output does not match the lexicon')
      throw new ContractError('InternalServerError', 'internal error')
    }
    return output
  }

  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/xrpc/:nsid', handler: handle })
}
