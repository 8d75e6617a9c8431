/**
 * `/xrpc/{nsid}`: GET for queries, POST for procedures. In order: unknown or retired NSID → 501;
 * wrong verb → 400; params and body validated against the lexicon, and for what atproto's validation lets through
 * but the layers behind cannot take (below) → 400 InvalidRequest naming the field; planned method →
 * 501; the auth verifier the method was registered with; its handler (a plain function: its own checks, one gateway
 * operation, the answer mapped; the domain that serves it gathers every fact it decides on and makes every change it
 * needs); the output checked against the lexicon; an error the lexicon does not declare is logged (methods/method-errors.ts).
 */
import type { LexUserType } from '@atproto/lexicon'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { parseProduct } from '@svc/checkout-product'
import { isEnvironment } from '@svc/vocabulary'
import { ContractError, type ErrorCode } from '@svc/errors'
import { lexicons, RETIRED_NSIDS } from '@svc/lexicons'
import type { GatewayClient, GatewayDocument } from '@svc/gateway-client'
import type { HandlerContext, MethodTable } from '../methods'
import { answersError } from '../methods/method-errors'
import type { AssertionVerifier } from '../auth/assertion'
import type { IssuerLookupGuard, Limiter } from './rate-limit'

export interface XrpcPluginOptions {
  methods: MethodTable
  gateway: GatewayClient
  /** the per app and environment rate limit, checked once the app is verified */
  limit: Limiter
  /** per client address, the distinct issuers whose DID documents its calls had looked up: checked before auth, and before a buyer's or organizer's assertion is verified */
  issuerLookups: IssuerLookupGuard
  /** buyer and organizer assertions, for the handlers that take one */
  assertions: AssertionVerifier
}

/**
 * The environment a call acts in, for its rate limit: its `environment` parameter or field (any other value than
 * test or live counts as one, `other`: each made-up value would otherwise get a count of its own), else the
 * environment of the checkout status token it carries (`pst_test_…`), else the one its checkout product names
 * (initiate), else none.
 */
export function callEnvironment(params: Record<string, unknown>, input: Record<string, unknown>): string {
  const named = params.environment ?? input.environment
  if (named !== undefined) return isEnvironment(named) ? named : 'other'
  const token = params.token ?? input.token
  const ofToken = typeof token === 'string' && /^[a-z]+_(test|live)_/.exec(token)?.[1]
  if (ofToken) return ofToken
  const product = input.product === undefined ? null : parseProduct(input.product)
  return (product?.ok && product.product.environment) || 'none'
}

/** An NSID as written in a path: `lex:` prefixes and `#main` fragments, which the lexicons also resolve, are none. */
const NSID_PATH = /^[a-zA-Z][a-zA-Z0-9-]*(\.[a-zA-Z0-9-]+)+$/

/** The lexicon's method of this name: a query or a procedure, named in its plain form (not `lex:…`, not `#…`). */
export function lexiconMethod(nsid: string) {
  if (!NSID_PATH.test(nsid)) return undefined
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
    const prop = Object.hasOwn(props, name) ? props[name] : undefined
    if (!prop || raw === undefined) continue // unknown parameters are ignored, as atproto does
    // an empty value counts as absent (`?eventUri=` is EventRequired, as no eventUri is), as `app` and `environment`
    // do on the developer routes
    if (raw === '' || (Array.isArray(raw) && raw.every((v) => v === ''))) continue
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

/*
 * What @atproto/lexicon's validation lets through and this service refuses, because the layers behind the edge cannot
 * take it (test/e2e/adapter/hostile-input.test.ts found it as a 500): an array where the lexicon says object (atproto
 * checks an object with `typeof value === 'object'`, which an array passes when the object has no required property;
 * GraphQL then refuses the variable). It throws an Error naming the field, as atproto's validation errors do
 * ("Input/modules …"). NUL characters and nesting are refused on the raw body before validation (assertPlainInput).
 */
type Def = LexUserType | { type: string; ref?: string; refs?: string[]; items?: Def; properties?: Record<string, Def> }

function assertShape(def: Def, value: unknown, path: string): void {
  if (value === undefined || value === null) return
  switch (def.type) {
    case 'ref':
      return assertShape(lexicons.getDefOrThrow((def as { ref: string }).ref), value, path)
    case 'union': {
      const $type = (value as { $type?: unknown }).$type
      const ref = (def as { refs: string[] }).refs.find((r) => typeof $type === 'string' && (r === $type || r === `lex:${$type}` || r === `lex:${$type}#main`))
      return ref === undefined ? undefined : assertShape(lexicons.getDefOrThrow(ref), value, path)
    }
    case 'array':
      if (Array.isArray(value)) value.forEach((item, i) => assertShape((def as { items: Def }).items, item, `${path}/${i}`))
      return
    case 'object': {
      if (Array.isArray(value)) throw new Error(`${path} must be an object`)
      const properties = (def as { properties?: Record<string, Def> }).properties ?? {}
      for (const [key, property] of Object.entries(properties)) assertShape(property, (value as Record<string, unknown>)[key], `${path}/${key}`)
      return
    }
    default:
      return
  }
}

/** The procedure's input (already valid by atproto's rules) has an object wherever its lexicon says object. */
function assertInputShape(nsid: string, input: unknown): void {
  const schema = (lexicons.getDefOrThrow(nsid) as { input?: { schema?: Def } }).input?.schema
  if (schema) assertShape(schema, input, 'Input')
}

/** deeper than any lexicon's input (theirs are a few levels): a deeper body is refused before anything else walks it */
export const MAX_INPUT_DEPTH = 32

/**
 * Refuses U+0000 in any text of `value` (a key or a string) and nesting deeper than MAX_INPUT_DEPTH, in one walk
 * without recursion (a recursive walk of a body nested 10,000 deep overflows the stack). The path to a value is
 * spelled out only for the error.
 */
export function assertPlainInput(value: unknown, root: string): void {
  type Step = { value: unknown; depth: number; key: string | null; parent: Step | null }
  const pathOf = (step: Step | null): string => (step === null ? root : step.key === null ? pathOf(step.parent) : `${pathOf(step.parent)}/${step.key}`)
  const nul = (at: string) => new Error(`${at} must not contain the NUL character (U+0000)`)
  const pending: Step[] = [{ value, depth: 1, key: null, parent: null }]
  for (let step = pending.pop(); step; step = pending.pop()) {
    const v = step.value
    if (typeof v === 'string') {
      if (v.includes('\u0000')) throw nul(pathOf(step))
      continue
    }
    if (v === null || typeof v !== 'object') continue
    if (step.depth > MAX_INPUT_DEPTH) throw new Error(`Input nests deeper than ${MAX_INPUT_DEPTH} levels`)
    for (const [key, item] of Object.entries(v)) {
      if (key.includes('\u0000')) throw nul(pathOf(step))
      pending.push({ value: item, depth: step.depth + 1, key, parent: step })
    }
  }
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
      assertPlainInput(decoded, 'Params')
      return decoded
    })
    let input: Record<string, unknown> = {}
    if (def.type === 'procedure' && def.input) {
      if (request.body === undefined || request.body === null) throw new ContractError('InvalidRequest', 'a JSON request body is required')
      input = validation(() => {
        assertPlainInput(request.body, 'Input')
        const valid = lexicons.assertValidXrpcInput(nsid, request.body) as Record<string, unknown>
        assertInputShape(nsid, valid)
        return valid
      })
    }

    const route = opts.methods.get(nsid)
    if (!route || 'planned' in route) {
      throw new ContractError('MethodNotImplemented', `${nsid} is not available yet${route ? ` (${route.planned})` : ''}`)
    }

    await opts.issuerLookups.check(request, reply)
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
      // an app the service does not know is counted for the address, as an issuer looked up is
      graph: <TResult, TVariables>(document: GatewayDocument<TResult, TVariables>, variables: TVariables) =>
        opts.gateway.query(document, variables, as).catch(async (err: unknown) => {
          if (err instanceof ContractError && err.code === 'AppNotRegistered') await opts.issuerLookups.countUnregistered(request, caller.appDid)
          throw err
        }),
      // an assertion's issuer is looked up as the app's is: counted for the address first
      assertion: async (jwt: string | undefined, check: { iss: string; code: ErrorCode; replayScope?: string }) => {
        if (jwt) await opts.issuerLookups.check(request, reply, jwt)
        return opts.assertions(jwt, { ...check, nsid })
      },
    } as unknown as HandlerContext<typeof route.nsid>
    const output: unknown = await route.handler(ctx).catch((err: unknown) => {
      if (err instanceof ContractError && !answersError(nsid, err.code)) request.log.error({ code: err.code }, 'error not declared in the lexicon')
      throw err
    })
    try {
      lexicons.assertValidXrpcOutput(nsid, output)
    } catch (err) {
      request.log.error({ err }, 'output does not match the lexicon')
      throw new ContractError('InternalServerError', 'internal error')
    }
    return output
  }

  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], url: '/xrpc/:nsid', handler: handle })
}
