import { inspect } from 'node:util'
import { ConfigError, configurationSummary, loadConfig, parseTrustProxy, rotationsInProgress } from '../src'

const token = (c: string) => c.repeat(40)

describe('internal callers\' keys', () => {
  it('gives every calling process a key of its own', () => {
    const config = loadConfig({ EVENTS_CONTEXT_KEY: token('e'), ADAPTER_CONTEXT_KEY: token('a'), PAYMENTS_CONTEXT_KEY: token('p'), APPS_CONTEXT_KEY: token('q'), TICKETS_CONTEXT_KEY: token('t'), GATEWAY_CONTEXT_KEY: token('g') })
    expect(config.secrets.callerKeys).toEqual({ gateway: token('g'), 'xrpc-adapter': token('a'), events: token('e'), payments: token('p'), apps: token('q'), tickets: token('t') })
    const defaults = Object.values(loadConfig({}).secrets.callerKeys)
    expect(new Set(defaults).size).toBe(defaults.length)
  })

  it('refuses at start two callers sharing one key', () => {
    expect(() => loadConfig({ EVENTS_CONTEXT_KEY: token('a'), ADAPTER_CONTEXT_KEY: token('a') })).toThrow(/EVENTS_CONTEXT_KEY.*must differ from ADAPTER_CONTEXT_KEY/s)
    expect(() => loadConfig({ OPERATOR_TOKEN: token('e'), PAYMENTS_CONTEXT_KEY: token('e') })).toThrow(/OPERATOR_TOKEN.*must differ from PAYMENTS_CONTEXT_KEY/s)
    // the metrics token opens /metrics only: it may not be the operator token
    expect(() => loadConfig({ OPERATOR_TOKEN: token('o'), METRICS_TOKEN: token('o') })).toThrow(/METRICS_TOKEN.*must differ from OPERATOR_TOKEN/s)
    expect(() => loadConfig({ GATEWAY_CONTEXT_KEY: token('k'), WEBHOOK_SECRET_KEY: token('k') })).toThrow(/WEBHOOK_SECRET_KEY.*must differ from GATEWAY_CONTEXT_KEY/s)
    expect(() => loadConfig({ PAYMENT_TOKEN_SECRET: token('s'), WEBHOOK_SECRET_KEY: token('s') })).toThrow(/WEBHOOK_SECRET_KEY.*must differ from PAYMENT_TOKEN_SECRET/s)
  })

  it('refuses the development credential in production', () => {
    const production = {
      NODE_ENV: 'production',
      SERVICE_DID: 'did:web:api.svc.example',
      GATEWAY_CONTEXT_KEY: token('g'),
      ADAPTER_CONTEXT_KEY: token('a'),
      PAYMENTS_CONTEXT_KEY: token('p'),
      APPS_CONTEXT_KEY: token('q'),
      TICKETS_CONTEXT_KEY: token('t'),
      OPERATOR_TOKEN: token('o'),
      METRICS_TOKEN: token('m'),
      PAYMENT_TOKEN_SECRET: token('s'),
      WEBHOOK_SECRET_KEY: token('w'),
      SERVICE_SIGNING_KEY: 'ab'.repeat(32),
    }
    expect(() => loadConfig(production)).toThrow(/EVENTS_CONTEXT_KEY.*must be set in production/s)
    expect(loadConfig({ ...production, EVENTS_CONTEXT_KEY: token('e') }).secrets.callerKeys.events).toBe(token('e'))
    // a key before a rotation is accepted as the key is: one left at the public development default would let anyone sign
    const devGateway = loadConfig({}).secrets.callerKeys.gateway
    expect(() => loadConfig({ ...production, EVENTS_CONTEXT_KEY: token('e'), GATEWAY_CONTEXT_KEY_PREVIOUS: devGateway })).toThrow(/GATEWAY_CONTEXT_KEY_PREVIOUS: is a public development default/)
    expect(() => loadConfig({ ...production, EVENTS_CONTEXT_KEY: token('e'), ALLOW_INSECURE_DID_WEB: 'true' })).toThrow(/ALLOW_INSECURE_DID_WEB: is a development setting/)
    // GraphiQL's page runs scripts from a CDN, and the operator token is typed into it
    expect(() => loadConfig({ ...production, EVENTS_CONTEXT_KEY: token('e'), GRAPHIQL: 'true' })).toThrow(/GRAPHIQL: is a development setting: its page loads its scripts from unpkg\.com/)
    expect(loadConfig({ ...production, EVENTS_CONTEXT_KEY: token('e'), GRAPHIQL: 'false' }).graphiql).toBe(false)
  })

  it('production names its own SERVICE_DID and runs the real retry schedule', () => {
    const { SERVICE_DID: _own, ...withoutDid } = everyKeySet
    expect(() => loadConfig(withoutDid)).toThrow(/SERVICE_DID: must be set in production/)
    expect(() => loadConfig({ ...everyKeySet, DELIVERY_SCHEDULE_SCALE: '0.0001' })).toThrow(/DELIVERY_SCHEDULE_SCALE: is a test setting/)
    expect(loadConfig({ ...everyKeySet, DELIVERY_SCHEDULE_SCALE: '1' }).delivery.scheduleScale).toBe(1)
    expect(loadConfig({ ...withoutDid, NODE_ENV: 'test', DELIVERY_SCHEDULE_SCALE: '0.0001' }).delivery.scheduleScale).toBe(0.0001)
  })

  it('SERVICE_DID is a DID that receivers resolve: did:plc, or did:web of a host alone', () => {
    for (const did of ['did:plc:ewvi7nxzyoun6zhxrhs64oiz', 'did:web:api.svc.example', 'did:web:localhost%3A4000']) expect(loadConfig({ SERVICE_DID: did }).serviceDid).toBe(did)
    // a did:web with a path: atproto's resolvers (and the SDK's) refuse it, so every XRPC delivery would fail
    for (const did of ['did:web:svc.example.com:events', 'did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme', 'did:example:123', 'svc.example.com']) {
      expect(() => loadConfig({ SERVICE_DID: did })).toThrow(/SERVICE_DID: must be a did:plc, or a did:web of a host alone/)
    }
  })

  it('a variable set empty is unset: its default', () => {
    const config = loadConfig({ REDIS_PREFIX: '', HOST: ' ', SERVICE_DID: '', TRUST_PROXY: '' })
    expect([config.redisPrefix, config.host, config.serviceDid]).toEqual(['svc:', '127.0.0.1', 'did:web:svc.localhost'])
  })

  it('a URL that does not parse is refused as invalid, and the refusal never quotes it (its password)', () => {
    for (const env of [{ MONGO_URL: 'mongodb://svc:PW_LEAK@m1:27017,m2:27017' }, { MONGO_URL: 'http://svc:PW_LEAK@m1:1,m2:2/svc' }, { REDIS_URL: 'redis://:PW_LEAK@redis:99999/0' }]) {
      let refusal: unknown
      try {
        loadConfig(env)
      } catch (err) {
        refusal = err
      }
      expect(refusal).toBeInstanceOf(ConfigError)
      expect(inspect(refusal)).not.toContain('PW_LEAK')
    }
  })

  it('MONGO_URL must name the database and REDIS_URL a database 0-15, or the drivers quietly use another', () => {
    // without a database the MongoDB driver uses `test`; ioredis skips a path that is not a number, and SELECT 16 fails unseen
    for (const MONGO_URL of ['mongodb://mongo:27017', 'mongodb://mongo:27017/', 'http://mongo:27017/svc', 'mongodb://mongo:27017/svc/extra']) {
      expect(() => loadConfig({ MONGO_URL })).toThrow(/MONGO_URL: must be a mongodb:\/\/ .*names the database/)
    }
    for (const REDIS_URL of ['redis://redis:6379/svc', 'redis://redis:6379/16', 'redis:6379/0', 'http://redis:6379']) {
      expect(() => loadConfig({ REDIS_URL })).toThrow(/REDIS_URL: must be a redis:\/\//)
    }
    expect(loadConfig({ MONGO_URL: 'mongodb+srv://user:pw@cluster.example.net/svc?retryWrites=true' }).mongoUrl).toBe('mongodb+srv://user:pw@cluster.example.net/svc?retryWrites=true')
    // a replica set's seed list, as the driver reads it (it is no WHATWG URL)
    const seeds = 'mongodb://svc:pw@m1:27017,m2:27017,m3:27017/svc?replicaSet=rs0'
    expect(loadConfig({ MONGO_URL: seeds }).mongoUrl).toBe(seeds)
    for (const REDIS_URL of ['redis://redis:6379', 'redis://redis:6379/', 'redis://redis:6379/15', 'rediss://:pw@redis.example.net:6380/2']) expect(loadConfig({ REDIS_URL }).redisUrl).toBe(REDIS_URL)
  })

  it('the dashboard is on the checkout host unless DASHBOARD_URL says otherwise', () => {
    expect(loadConfig(withRealSecrets({ CHECKOUT_URL: 'https://pay.example.com/' })).dashboardUrl).toBe('https://pay.example.com/dashboard')
    // the URLs answers are built from must hold URI characters only: a space would make each such answer a 500
    expect(() => loadConfig({ CHECKOUT_URL: 'https://pay.example.com/a b' })).toThrow(/CHECKOUT_URL/)
    expect(() => loadConfig({ DASHBOARD_URL: 'https://creators.example.com/dash board' })).toThrow(/DASHBOARD_URL/)
    expect(() => loadConfig({ BASE_URL: 'https://api.example.com/x<y>' })).toThrow(/BASE_URL/)
    expect(() => loadConfig({ CHECKOUT_URL: 'ftp://pay.example.com' })).toThrow(/CHECKOUT_URL/)
    // every link is built on it: credentials, a query or a fragment would ride along in each (and in the logs)
    for (const url of ['https://user:pw@pay.example.com', 'https://pay.example.com/?x=1', 'https://pay.example.com/#frag']) {
      expect(() => loadConfig(withRealSecrets({ CHECKOUT_URL: url }))).toThrow(/CHECKOUT_URL.*without credentials, query or fragment/s)
      expect(() => loadConfig(withRealSecrets({ CHECKOUT_URL: url }))).not.toThrow(/user:pw|x=1|#frag/)
    }
    expect(loadConfig(withRealSecrets({ CHECKOUT_URL: 'https://pay.example.com:8443/svc' })).checkoutUrl).toBe('https://pay.example.com:8443/svc')
    expect(loadConfig(withRealSecrets({ CHECKOUT_URL: 'HTTPS://pay.example.com' })).checkoutUrl).toBe('HTTPS://pay.example.com')
    expect(loadConfig({ CHECKOUT_URL: 'http://[::1]:4001' }).checkoutUrl).toBe('http://[::1]:4001')
    expect(loadConfig({}).dashboardUrl).toBe('http://127.0.0.1:4001/dashboard')
    expect(loadConfig(withRealSecrets({ CHECKOUT_URL: 'https://pay.example.com', DASHBOARD_URL: 'https://creators.example.com/' })).dashboardUrl).toBe('https://creators.example.com')
  })

  it('refuses pages served over http in production, except on a loopback host', () => {
    const production = { ...everyKeySet, CHECKOUT_URL: 'http://pay.example.com' }
    expect(() => loadConfig(production)).toThrow(/CHECKOUT_URL.*must be https in production/s)
    expect(() => loadConfig({ ...production, CHECKOUT_URL: 'https://pay.example.com', DASHBOARD_URL: 'http://pay.example.com/dashboard' })).toThrow(/DASHBOARD_URL.*must be https/s)
    expect(loadConfig({ ...production, CHECKOUT_URL: 'https://pay.example.com', DASHBOARD_URL: 'https://pay.example.com/dashboard' }).checkoutUrl).toBe('https://pay.example.com')
    expect(loadConfig({ ...production, CHECKOUT_URL: 'http://localhost:4001', DASHBOARD_URL: 'http://localhost:4001/dashboard' }).checkoutUrl).toBe('http://localhost:4001')
    expect(() => loadConfig({ ...production, NODE_ENV: 'development' })).not.toThrow()
  })

  it('refuses the development defaults on a host reachable beyond this machine (NODE_ENV left at its default)', () => {
    expect(() => loadConfig({ HOST: '0.0.0.0' })).toThrow(/HOST.*set NODE_ENV=production with real secrets, or HOST=127\.0\.0\.1/s)
    expect(() => loadConfig({ HOST: '10.1.2.3', NODE_ENV: 'development' })).toThrow(/HOST/)
    for (const host of ['127.0.0.1', 'localhost', '::1']) expect(loadConfig({ HOST: host }).host).toBe(host)
    // real secrets everywhere: a developer's own choice
    const { NODE_ENV: _production, ...realSecrets } = everyKeySet
    expect(loadConfig({ ...realSecrets, HOST: '0.0.0.0' }).host).toBe('0.0.0.0')
    // NODE_ENV=test (a staging deployment labelled so) is no way around it
    expect(() => loadConfig({ HOST: '0.0.0.0', NODE_ENV: 'test' })).toThrow(/HOST/)
    // nor a proxy on this machine in front of a loopback HOST: the public address the pages announce gives it away
    expect(() => loadConfig({ HOST: '127.0.0.1', CHECKOUT_URL: 'https://pay.example.com', TRUST_PROXY: '127.0.0.1' })).toThrow(/CHECKOUT_URL.*development defaults of the secrets are public/s)
    expect(() => loadConfig({ DASHBOARD_URL: 'https://creators.example.com/dashboard' })).toThrow(/DASHBOARD_URL.*development defaults/s)
    expect(loadConfig(withRealSecrets({ HOST: '127.0.0.1', CHECKOUT_URL: 'https://pay.example.com' })).checkoutUrl).toBe('https://pay.example.com')
    expect(loadConfig({ CHECKOUT_URL: 'http://localhost:4001' }).checkoutUrl).toBe('http://localhost:4001')
  })

  it('a process logs what decides how exposed it is, never a secret: only whether one is a public development default', () => {
    const deployed = configurationSummary(loadConfig({ ...everyKeySet, CHECKOUT_URL: 'https://pay.example.com', TRUST_PROXY: '10.0.0.0/8' }))
    expect(deployed).toMatchObject({ nodeEnv: 'production', checkoutUrl: 'https://pay.example.com', trustProxy: ['10.0.0.0/8'], publicDevelopmentSecrets: false })
    for (const secret of Object.values(everyKeySet).filter((v) => v.length >= 32)) expect(JSON.stringify(deployed)).not.toContain(secret)
    expect(configurationSummary(loadConfig({})).publicDevelopmentSecrets).toBe(true)
  })

  it('refuses in production a TRUST_PROXY that trusts every client, and a PLC directory over http', () => {
    for (const all of ['true', '0.0.0.0/0', '10.0.0.1, ::/0']) {
      expect(() => loadConfig({ ...everyKeySet, TRUST_PROXY: all })).toThrow(/TRUST_PROXY.*trusts every client/s)
      expect(loadConfig({ ...everyKeySet, NODE_ENV: 'development', TRUST_PROXY: all }).trustProxy).toBeTruthy()
    }
    expect(loadConfig({ ...everyKeySet, TRUST_PROXY: '10.0.0.0/8' }).trustProxy).toEqual(['10.0.0.0/8'])
    expect(() => loadConfig({ ...everyKeySet, PLC_URL: 'http://plc.example.com' })).toThrow(/PLC_URL.*must be https in production/s)
    expect(loadConfig({ ...everyKeySet, PLC_URL: 'https://plc.example.com' }).plcUrl).toBe('https://plc.example.com')
    // logged at start: a URL with credentials (which fetch would refuse anyway) is refused, and not quoted
    for (const url of ['https://user:hunter2@plc.example.com', 'https://plc.example.com/?token=hunter2', 'ftp://plc.example.com']) {
      let refusal = ''
      try {
        loadConfig({ PLC_URL: url })
      } catch (err) {
        refusal = (err as Error).message
      }
      expect(refusal).toMatch(/PLC_URL.*without credentials, query or fragment/s)
      expect(refusal).not.toContain('hunter2')
    }
  })

  /** the secrets a deployment sets, without NODE_ENV */
  const withRealSecrets = (env: Record<string, string>) => {
    const { NODE_ENV: _production, ...secrets } = everyKeySet
    return { ...secrets, ...env }
  }
  const CALLER_KEYS = ['GATEWAY_CONTEXT_KEY', 'ADAPTER_CONTEXT_KEY', 'EVENTS_CONTEXT_KEY', 'PAYMENTS_CONTEXT_KEY', 'APPS_CONTEXT_KEY', 'TICKETS_CONTEXT_KEY']
  const everyKeySet: Record<string, string> = { NODE_ENV: 'production', SERVICE_DID: 'did:web:api.svc.example', OPERATOR_TOKEN: token('o'), METRICS_TOKEN: token('m'), PAYMENT_TOKEN_SECRET: token('s'), WEBHOOK_SECRET_KEY: token('w'), SERVICE_SIGNING_KEY: 'ab'.repeat(32), ...Object.fromEntries(CALLER_KEYS.map((key, i) => [key, token(String(i))])) }

  it('refuses the development settings outside production too when HOST is reachable beyond this machine (a staging deployment with real secrets)', () => {
    const staging = { ...everyKeySet, NODE_ENV: 'test', HOST: '0.0.0.0', CHECKOUT_URL: 'https://pay.staging.example.com' }
    expect(loadConfig(staging).host).toBe('0.0.0.0')
    for (const key of ['DEV_ALLOW_LOOPBACK_WEBHOOKS', 'ALLOW_INSECURE_DID_WEB', 'GRAPHIQL']) {
      expect(() => loadConfig({ ...staging, [key]: 'true' })).toThrow(new RegExp(`${key}: is a development setting, accepted only with HOST on loopback \\(0\\.0\\.0\\.0`))
      expect(loadConfig({ ...staging, HOST: '127.0.0.1', [key]: 'true' }).host).toBe('127.0.0.1')
    }
  })

  it('serves GraphiQL by default in development on loopback only', () => {
    const development = withRealSecrets({ NODE_ENV: 'development' })
    expect(loadConfig({ ...development, HOST: '127.0.0.1' }).graphiql).toBe(true)
    expect(loadConfig({ ...development, HOST: '0.0.0.0' }).graphiql).toBe(false)
    expect(loadConfig({ ...everyKeySet, NODE_ENV: 'test', HOST: '127.0.0.1' }).graphiql).toBe(false)
  })

  it('names a key for every issuer of the internal context', () => {
    expect(Object.keys(loadConfig(everyKeySet).secrets.callerKeys).sort()).toEqual(['apps', 'events', 'gateway', 'payments', 'tickets', 'xrpc-adapter'])
  })

  it.each(CALLER_KEYS)('refuses %s at its development default in production, and equal to another key', (key) => {
    expect(() => loadConfig(everyKeySet)).not.toThrow()
    const { [key]: _left, ...withoutIt } = everyKeySet
    expect(() => loadConfig(withoutIt)).toThrow(new RegExp(`${key}.*must be set in production`, 's'))
    const other = key === 'GATEWAY_CONTEXT_KEY' ? 'ADAPTER_CONTEXT_KEY' : 'GATEWAY_CONTEXT_KEY'
    expect(() => loadConfig({ ...everyKeySet, [key]: everyKeySet[other] })).toThrow(/must differ from/)
    expect(() => loadConfig({ ...everyKeySet, [`${key}_PREVIOUS`]: everyKeySet[other] })).toThrow(/must differ from/)
  })
})

describe('an empty variable', () => {
  it('is an unset one: a number takes its default, not 0 (a random port, no rate limit)', () => {
    const blank = { API_PORT: '', XRPC_RATE_LIMIT_MAX: '', UTILITY_RATE_LIMIT_MAX: ' ', DELIVERY_APP_CACHE_MS: '', DELIVERY_CONCURRENCY: '' }
    const config = loadConfig(blank)
    const defaults = loadConfig({})
    expect(config.ports.api).toBe(4000)
    expect(config.limits).toEqual(defaults.limits)
    expect(config.limits.xrpc.max).toBeGreaterThan(0)
    expect(config.delivery.appCacheMs).toBe(defaults.delivery.appCacheMs)
    expect(config.delivery.concurrency).toBe(20)
    // a value still counts, 0 included, and one that is no number is refused
    expect(loadConfig({ XRPC_RATE_LIMIT_MAX: '0', API_PORT: '4010' })).toMatchObject({ ports: { api: 4010 }, limits: { xrpc: { max: 0 } } })
    expect(() => loadConfig({ XRPC_RATE_LIMIT_MAX: 'many' })).toThrow(/XRPC_RATE_LIMIT_MAX/)
  })
})

describe('timeouts that must fit inside others', () => {
  it('the stop waits for a delivery attempt: SHUTDOWN_TIMEOUT_MS at least DELIVERY_TIMEOUT_MS + 5 s', () => {
    expect(() => loadConfig({ DELIVERY_TIMEOUT_MS: '60000', SHUTDOWN_TIMEOUT_MS: '30000' })).toThrow(/SHUTDOWN_TIMEOUT_MS.*DELIVERY_TIMEOUT_MS \+ 5000 \(65000\)/)
    expect(loadConfig({ DELIVERY_TIMEOUT_MS: '60000', SHUTDOWN_TIMEOUT_MS: '65000' }).shutdownTimeoutMs).toBe(65_000)
    expect(() => loadConfig({})).not.toThrow()
  })

  it('the test processor answers inside the 20 s a charge is waited for: TEST_PROCESSOR_LATENCY_MS at most 15 s', () => {
    expect(() => loadConfig({ TEST_PROCESSOR_LATENCY_MS: '21000' })).toThrow(/TEST_PROCESSOR_LATENCY_MS/)
    expect(loadConfig({ TEST_PROCESSOR_LATENCY_MS: '15000' }).testProcessorLatencyMs).toBe(15_000)
  })

  it('an outbox replays after Redis lost its data only what it still keeps: OUTBOX_REPLAY_WINDOW_MS at most OUTBOX_RETENTION_MS', () => {
    expect(loadConfig({}).outboxReplayWindowMs).toBe(24 * 3_600_000)
    expect(() => loadConfig({ OUTBOX_REPLAY_WINDOW_MS: String(8 * 24 * 3_600_000) })).toThrow(/OUTBOX_REPLAY_WINDOW_MS.*at most OUTBOX_RETENTION_MS/)
    expect(loadConfig({ OUTBOX_REPLAY_WINDOW_MS: String(7 * 24 * 3_600_000) }).outboxReplayWindowMs).toBe(7 * 24 * 3_600_000)
    expect(() => loadConfig({ OUTBOX_REPLAY_WINDOW_MS: '60000' })).toThrow(/OUTBOX_REPLAY_WINDOW_MS/)
  })
})

describe('payment token secret rotation', () => {
  it('takes the secret before the rotation as PAYMENT_TOKEN_SECRET_PREVIOUS, which must differ from the current one', () => {
    expect(loadConfig({}).secrets.previousPaymentTokens).toBeNull()
    expect(loadConfig({ PAYMENT_TOKEN_SECRET: token('n'), PAYMENT_TOKEN_SECRET_PREVIOUS: token('o') }).secrets).toMatchObject({ paymentTokens: token('n'), previousPaymentTokens: token('o') })
    expect(() => loadConfig({ PAYMENT_TOKEN_SECRET: token('n'), PAYMENT_TOKEN_SECRET_PREVIOUS: token('n') })).toThrow(/PAYMENT_TOKEN_SECRET_PREVIOUS.*must differ/s)
    expect(() => loadConfig({ PAYMENT_TOKEN_SECRET_PREVIOUS: 'short' })).toThrow(/PAYMENT_TOKEN_SECRET_PREVIOUS/)
    // docker-compose passes it empty when no rotation is under way
    expect(loadConfig({ PAYMENT_TOKEN_SECRET_PREVIOUS: '' }).secrets.previousPaymentTokens).toBeNull()
  })
})

describe('webhook secret key rotation', () => {
  it('takes the key before the rotation as WEBHOOK_SECRET_KEY_PREVIOUS, which must differ from the current one', () => {
    expect(loadConfig({}).secrets.previousWebhookSecretKey).toBeNull()
    expect(loadConfig({ WEBHOOK_SECRET_KEY: token('n'), WEBHOOK_SECRET_KEY_PREVIOUS: token('o') }).secrets).toMatchObject({ webhookSecretKey: token('n'), previousWebhookSecretKey: token('o') })
    expect(() => loadConfig({ WEBHOOK_SECRET_KEY: token('n'), WEBHOOK_SECRET_KEY_PREVIOUS: token('n') })).toThrow(/WEBHOOK_SECRET_KEY_PREVIOUS.*must differ/s)
    expect(loadConfig({ WEBHOOK_SECRET_KEY_PREVIOUS: '' }).secrets.previousWebhookSecretKey).toBeNull()
  })
})

describe('rotations in progress', () => {
  it("names the _PREVIOUS secrets a process is given (each start warns of them), not another process's nor an empty one", () => {
    const env = { WEBHOOK_SECRET_KEY_PREVIOUS: token('w'), ADAPTER_CONTEXT_KEY_PREVIOUS: token('a'), PAYMENT_TOKEN_SECRET_PREVIOUS: '' }
    expect(rotationsInProgress(env, 'events').sort()).toEqual(['ADAPTER_CONTEXT_KEY_PREVIOUS', 'WEBHOOK_SECRET_KEY_PREVIOUS'])
    expect(rotationsInProgress(env, 'events-workers')).toEqual(['WEBHOOK_SECRET_KEY_PREVIOUS'])
    expect(rotationsInProgress(env, 'payments')).toEqual(['ADAPTER_CONTEXT_KEY_PREVIOUS'])
    // the adapter only signs with its key: it is given no _PREVIOUS
    expect(rotationsInProgress(env, 'xrpc-adapter')).toEqual([])
    expect(rotationsInProgress({}, 'gateway')).toEqual([])
  })
})

describe('context key rotation', () => {
  it('adds the keys before a rotation as callerKeys.previous; each must differ from every other credential', () => {
    expect(loadConfig({}).secrets.callerKeys.previous).toBeUndefined()
    const keys = loadConfig({ ADAPTER_CONTEXT_KEY: token('n'), ADAPTER_CONTEXT_KEY_PREVIOUS: token('o'), EVENTS_CONTEXT_KEY_PREVIOUS: '' }).secrets.callerKeys
    expect(keys['xrpc-adapter']).toBe(token('n'))
    expect(keys.previous).toEqual({ 'xrpc-adapter': token('o') })
    expect(() => loadConfig({ ADAPTER_CONTEXT_KEY: token('n'), ADAPTER_CONTEXT_KEY_PREVIOUS: token('n') })).toThrow(/ADAPTER_CONTEXT_KEY_PREVIOUS.*must differ from ADAPTER_CONTEXT_KEY/s)
    expect(() => loadConfig({ EVENTS_CONTEXT_KEY: token('e'), APPS_CONTEXT_KEY_PREVIOUS: token('e') })).toThrow(/APPS_CONTEXT_KEY_PREVIOUS.*must differ from EVENTS_CONTEXT_KEY/s)
  })
})

describe('TRUST_PROXY', () => {
  it('trusts no proxy unless told', () => {
    expect(loadConfig({}).trustProxy).toBe(false)
    expect(parseTrustProxy('')).toBe(false)
    expect(parseTrustProxy('false')).toBe(false)
  })
  it('takes all, or a list of addresses and CIDRs', () => {
    expect(parseTrustProxy('true')).toBe(true)
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1'])
  })
  it('refuses a number of hops at start (Fastify 5 would trust no one for it)', () => {
    expect(() => loadConfig({ TRUST_PROXY: '2' })).toThrow(/TRUST_PROXY.*number of hops/s)
  })
  it('refuses at start an entry that is not an address or a CIDR (Fastify would throw at listen, with a stack)', () => {
    for (const bad of ['yes', '10.0.0.0/33', '::1/129', '10.0.0.1/8/2', 'proxy.internal', '10.0.0.0/', '10.0.0.0/x']) {
      expect(() => loadConfig({ TRUST_PROXY: `127.0.0.1, ${bad}` })).toThrow(new RegExp(`TRUST_PROXY: ${JSON.stringify(bad).replace(/[./]/g, '\\$&')} is not an address or a CIDR`))
    }
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8, fd00::/8, ::1, 192.168.1.7' }).trustProxy).toEqual(['loopback', '10.0.0.0/8', 'fd00::/8', '::1', '192.168.1.7'])
  })
})

describe('SERVICE_SIGNING_KEY', () => {
  it('refuses 64 hex characters that are not a secp256k1 private key (0, or not below the curve order)', () => {
    for (const bad of ['0'.repeat(64), 'f'.repeat(64), 'fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141']) {
      expect(() => loadConfig({ SERVICE_SIGNING_KEY: bad })).toThrow(/SERVICE_SIGNING_KEY: is not a secp256k1 private key/)
    }
    expect(loadConfig({ SERVICE_SIGNING_KEY: 'fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140' }).secrets.serviceSigningKey).toMatch(/^f{31}e/)
  })
})
