import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Lexicons, parseLexiconDoc } from '@atproto/lexicon'
import { LEXICON_DIR, RETIRED_NSIDS, lexicons, loadLexiconDocuments, methodNsids, methodType } from '../src'

/** The oracle: every NSID of the contract (brand word replaced by `svc`) and its XRPC verb. */
const ACTIVE: Record<string, 'query' | 'procedure'> = {
  'network.svc.payment.initiate': 'procedure',
  'network.svc.payment.status': 'query',
  'money.svc.actor.getPayoutStatus': 'query',
  'money.svc.actor.getProfile': 'query',
  'money.svc.app.getConfig': 'query',
  'money.svc.app.updateConfig': 'procedure',
  'money.svc.app.requestRecipientApproval': 'procedure',
  'money.svc.app.getRecipientApproval': 'query',
  'money.svc.billing.requestVendorMigrationBatch': 'procedure',
  'money.svc.payment.listSubscriptions': 'query',
  'money.svc.payment.cancelSubscription': 'procedure',
  'money.svc.payment.registerCreatorProof': 'procedure',
  'money.svc.payment.declineRecord': 'procedure',
  'money.svc.catalog.registerAppLink': 'procedure',
  'money.svc.event.receiveEvent': 'procedure',
  'tickets.svc.getTicketAvailability': 'query',
  'tickets.svc.createTicketHold': 'procedure',
  'tickets.svc.claimFreeTicket': 'procedure',
  'tickets.svc.checkInTicket': 'procedure',
  'tickets.svc.configureTicketTiers': 'procedure',
}

const RETIRED: Record<string, 'query' | 'procedure'> = {
  'network.svc.payment.lookup': 'query',
  'money.svc.payment.registerPayerRecord': 'procedure',
  'money.svc.event.receive': 'procedure',
}

/** Records: this implementation's own shapes (the contract names them without fields); no method serves them. */
const RECORDS: Record<string, 'record'> = {
  'money.svc.payment.record': 'record',
}

/** Declared errors of each method, from the contract's Errors table (own shapes: this implementation's choice). */
const ERRORS: Record<string, string[]> = {
  // the contract's three, plus our ProcessorNotConfigured for live before a live processor exists (docs/decisions.md)
  'network.svc.payment.initiate': ['InvalidProduct', 'RecipientNotPayable', 'AppUnauthorized', 'ProcessorNotConfigured'],
  'network.svc.payment.status': ['MissingToken', 'InvalidToken', 'NotFound', 'AppUnauthorized'],
  'money.svc.actor.getPayoutStatus': ['ActorRequired', 'ActorNotFound', 'AppUnauthorized'],
  'money.svc.app.getConfig': ['AppNotRegistered', 'AppEnvironmentNotConfigured'],
  'money.svc.app.updateConfig': [
    'AppNotRegistered',
    'AppEnvironmentNotConfigured',
    'InvalidRequest',
    'WebhookUrlNotAllowed',
    'AppUrlNotAllowed',
  ],
  // the contract's three, plus our AppUrlNotAllowed for a setupReturnUrl off the app origin (docs/decisions.md)
  'money.svc.app.requestRecipientApproval': ['AppUnauthorized', 'RecipientNotFound', 'RecipientAppApprovalBlocked', 'AppUrlNotAllowed'],
  'money.svc.billing.requestVendorMigrationBatch': [
    'AppUnauthorized',
    'CreatorNotFound',
    'InvalidCsv',
    'MigrationSourceUnsupported',
  ],
  'money.svc.payment.listSubscriptions': ['AppUnauthorized', 'InvalidRole'],
  'money.svc.payment.cancelSubscription': ['SubscriptionNotFound', 'NotAllowed', 'ProcessorError'],
  // the contract's three, plus what the SDK's receiver also answers (packages/sdk/src/receiver/envelope.ts)
  'money.svc.event.receiveEvent': ['InvalidSignature', 'UnsupportedEvent', 'DuplicateDelivery', 'ApiVersionMismatch', 'InvalidEnvelope', 'DeliveryInProgress'],
  'tickets.svc.getTicketAvailability': ['EventRequired', 'AppUnauthorized', 'TicketsModuleDisabled'],
  // the contract's, plus the module switch and (for a free claim) the app's access, as getTicketAvailability has them
  'tickets.svc.createTicketHold': ['TicketHoldUnavailable', 'BuyerAssertionInvalid', 'AppUnauthorized', 'TicketsModuleDisabled', 'ProcessorNotConfigured'],
  'tickets.svc.claimFreeTicket': ['TicketHoldUnavailable', 'BuyerAssertionInvalid', 'DuplicateClaim', 'AppUnauthorized', 'TicketsModuleDisabled'],
  'tickets.svc.checkInTicket': ['TicketTokenInvalid', 'TicketVoided', 'ScannerNotAuthorized', 'TicketAlreadyCheckedIn'],
}

const ALL = { ...ACTIVE, ...RETIRED }
const APP = 'did:web:app.example.com'
const EVENT = 'at://did:plc:organizer123/events.smokesignal.calendar.event/3kabc'

function mainOf(nsid: string): { type: string; description?: string; errors?: { name: string }[] } {
  const def = lexicons.getDef(nsid)
  if (!def) throw new Error(`no main def for ${nsid}`)
  return def as { type: string; description?: string; errors?: { name: string }[] }
}

describe('lexicon documents', () => {
  const docs = loadLexiconDocuments()

  test('LEXICON_DIR is the lexicons workspace', () => {
    expect(existsSync(join(LEXICON_DIR, 'package.json'))).toBe(true)
    expect(existsSync(join(LEXICON_DIR, 'money', 'svc', 'app', 'getConfig.json'))).toBe(true)
  })

  test('every contract NSID and record has exactly one document, and nothing else is loaded', () => {
    const ids = docs.map((d) => d.id).sort()
    expect(new Set(ids).size).toBe(ids.length)
    expect(ids).toEqual([...Object.keys(ALL), ...Object.keys(RECORDS)].sort())
    expect(methodNsids()).toEqual(Object.keys(ALL).sort())
    for (const [nsid, type] of Object.entries(RECORDS)) {
      expect(mainOf(nsid).type).toBe(type)
      expect(methodType(nsid)).toBeUndefined()
    }
  })

  test('each document is a valid Lexicon v1 document whose id equals its path', () => {
    for (const doc of docs) {
      expect(doc.lexicon).toBe(1)
      expect(() => parseLexiconDoc(doc)).not.toThrow()
      expect(existsSync(join(LEXICON_DIR, ...doc.id.split('.')) + '.json')).toBe(true)
    }
  })

  test('documents compile into a fresh Lexicons instance (all refs resolve)', () => {
    const fresh = new Lexicons(loadLexiconDocuments())
    expect([...fresh].length).toBe(Object.keys(ALL).length + Object.keys(RECORDS).length)
  })

  test.each(Object.entries(ALL))('%s is a %s', (nsid, verb) => {
    expect(methodType(nsid)).toBe(verb)
    expect(mainOf(nsid).type).toBe(verb)
  })

  test('methodType is undefined for unknown NSIDs', () => {
    expect(methodType('money.svc.app.nothingHere')).toBeUndefined()
    expect(methodType('not an nsid')).toBeUndefined()
  })

  test('retired methods are marked and only they are', () => {
    expect([...RETIRED_NSIDS].sort()).toEqual(Object.keys(RETIRED).sort())
    for (const nsid of Object.keys(RETIRED)) expect(mainOf(nsid).description).toMatch(/^RETIRED:/)
    for (const nsid of Object.keys(ACTIVE)) expect(mainOf(nsid).description).not.toMatch(/RETIRED/)
  })

  test.each(Object.entries(ERRORS))('%s declares the contract errors', (nsid, names) => {
    expect((mainOf(nsid).errors ?? []).map((e) => e.name).sort()).toEqual([...names].sort())
  })

  test('every method declares at least one error, and every def has a one-line description', () => {
    for (const doc of docs) {
      if (!(doc.id in RECORDS)) expect((mainOf(doc.id).errors ?? []).length).toBeGreaterThan(0)
      for (const [name, def] of Object.entries(doc.defs)) {
        const description = (def as { description?: string }).description
        expect({ def: `${doc.id}#${name}`, ok: typeof description === 'string' && description.length > 0 }).toEqual({
          def: `${doc.id}#${name}`,
          ok: true,
        })
        expect(description).not.toMatch(/\n/)
      }
    }
  })
})

describe('validation', () => {
  test('getConfig requires environment', () => {
    expect(() => lexicons.assertValidXrpcParams('money.svc.app.getConfig', {})).toThrow(/environment/)
    expect(lexicons.assertValidXrpcParams('money.svc.app.getConfig', { environment: 'test' })).toEqual({
      environment: 'test',
    })
  })

  test('params whose absence has its own contract error are not lexicon-required', () => {
    expect(() => lexicons.assertValidXrpcParams('network.svc.payment.status', {})).not.toThrow()
    expect(() => lexicons.assertValidXrpcParams('money.svc.actor.getPayoutStatus', {})).not.toThrow()
    expect(() => lexicons.assertValidXrpcParams('tickets.svc.getTicketAvailability', {})).not.toThrow()
    expect(() => lexicons.assertValidXrpcParams('money.svc.actor.getPayoutStatus', { actor: 'not-a-did' })).toThrow()
    expect(() =>
      lexicons.assertValidXrpcParams('tickets.svc.getTicketAvailability', { eventUri: 'https://x.example' }),
    ).toThrow()
  })

  test('initiate takes product', () => {
    expect(() => lexicons.assertValidXrpcInput('network.svc.payment.initiate', { product: 'svc.checkout.v1:abc' })).not.toThrow()
    expect(() => lexicons.assertValidXrpcInput('network.svc.payment.initiate', {})).toThrow(/product/)
    expect(() => lexicons.assertValidXrpcInput('network.svc.payment.initiate', { product: 42 })).toThrow()
    expect(() =>
      lexicons.assertValidXrpcOutput('network.svc.payment.initiate', {
        token: 'pst_abc',
        url: 'https://checkout.example.com/checkout/bct_abc',
      }),
    ).not.toThrow()
  })

  test('status output: status alone, or with a payment record ref', () => {
    expect(() => lexicons.assertValidXrpcOutput('network.svc.payment.status', { status: 'pending' })).not.toThrow()
    expect(() =>
      lexicons.assertValidXrpcOutput('network.svc.payment.status', {
        status: 'completed',
        ref: {
          uri: 'at://did:web:svc.example.com/money.svc.payment.record/3kabcdefghi22',
          cid: 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm',
        },
      }),
    ).not.toThrow()
    expect(() =>
      lexicons.assertValidXrpcOutput('network.svc.payment.status', { status: 'completed', ref: { uri: 'nope' } }),
    ).toThrow()
  })

  test('getConfig output accepts a full configuration', () => {
    expect(() =>
      lexicons.assertValidXrpcOutput('money.svc.app.getConfig', {
        appDid: APP,
        environment: 'test',
        appUrl: 'https://app.example.com',
        feeShareBps: 500,
        webhook: { configured: true, url: 'https://app.example.com/hooks/svc', paused: false },
        appConfig: {
          modules: { tickets: true },
          ticketing: { qrPasses: true, walletPasses: false },
          ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true },
        },
      }),
    ).not.toThrow()
    expect(() =>
      lexicons.assertValidXrpcOutput('money.svc.app.getConfig', {
        appDid: APP,
        environment: 'test',
        appUrl: 'https://app.example.com',
        feeShareBps: 10001,
        webhook: { configured: false, paused: false },
        appConfig: {
          modules: { tickets: false },
          ticketing: { qrPasses: false, walletPasses: false },
          ticketFee: { bps: 0, flatAmount: 0, flatCurrency: 'usd', passToBuyer: false },
        },
      }),
    ).toThrow(/feeShareBps/)
  })

  test('updateConfig input: app-controlled fields only in the schema; output accepts a full response', () => {
    expect(() =>
      lexicons.assertValidXrpcInput('money.svc.app.updateConfig', {
        environment: 'test',
        modules: { tickets: true },
        ticketing: { qrPasses: true, walletPasses: true },
        ticketFee: { passToBuyer: true },
        webhookUrl: 'https://app.example.com/hooks/svc',
        appUrl: 'https://app.example.com',
      }),
    ).not.toThrow()
    expect(() => lexicons.assertValidXrpcInput('money.svc.app.updateConfig', { modules: { tickets: true } })).toThrow(
      /environment/,
    )
    expect(() =>
      lexicons.assertValidXrpcInput('money.svc.app.updateConfig', { environment: 'test', webhookUrl: 'not a url' }),
    ).toThrow()
    const feeInput = lexicons.getDef('money.svc.app.updateConfig#ticketFeeInput') as { properties: object }
    expect(Object.keys(feeInput.properties)).toEqual(['passToBuyer'])
    expect(() =>
      lexicons.assertValidXrpcOutput('money.svc.app.updateConfig', {
        environment: 'live',
        webhook: { configured: true, paused: false },
        appConfig: {
          modules: { tickets: true },
          ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true },
          ticketing: { qrPasses: true, walletPasses: true },
        },
      }),
    ).not.toThrow()
    expect(() =>
      lexicons.assertValidXrpcOutput('money.svc.app.updateConfig', {
        environment: 'live',
        webhook: { configured: true, paused: false },
        appConfig: { modules: { tickets: true }, ticketFee: { passToBuyer: true } },
      }),
    ).toThrow(/bps/)
  })

  test('receiveEvent input is the event envelope', () => {
    const envelope = {
      id: 'whd_01JABCDEF',
      type: 'app.webhook.test',
      createdAt: '2026-06-01T12:00:00.000Z',
      apiVersion: '2026-06',
      environment: 'test',
      data: { message: 'hello' },
    }
    expect(() => lexicons.assertValidXrpcInput('money.svc.event.receiveEvent', envelope)).not.toThrow()
    expect(() => lexicons.assertValidXrpcInput('money.svc.event.receiveEvent', { ...envelope, data: 'x' })).toThrow()
    expect(() =>
      lexicons.assertValidXrpcInput('money.svc.event.receiveEvent', { ...envelope, createdAt: 'yesterday' }),
    ).toThrow()
    expect(() => lexicons.assertValidXrpcOutput('money.svc.event.receiveEvent', { ok: true })).not.toThrow()
  })

  test('ticketing shapes', () => {
    expect(() =>
      lexicons.assertValidXrpcInput('tickets.svc.createTicketHold', {
        environment: 'test',
        eventUri: EVENT,
        buyerDid: 'did:plc:buyer123',
        buyerAssertionJwt: 'eyJ.x.y',
        appOrderId: 'order-1',
        items: [{ ticketTypeId: 'tier_ga', quantity: 2 }],
      }),
    ).not.toThrow()
    expect(() =>
      lexicons.assertValidXrpcInput('tickets.svc.createTicketHold', {
        eventUri: EVENT,
        buyerDid: 'did:plc:buyer123',
        appOrderId: 'order-1',
        items: [{ ticketTypeId: 'tier_ga', quantity: 0 }],
      }),
    ).toThrow(/quantity/)
    expect(() =>
      lexicons.assertValidXrpcInput('tickets.svc.claimFreeTicket', {
        eventUri: EVENT,
        ticketTypeId: 'tier_free',
        buyerDid: 'did:plc:buyer123',
        buyerAssertionJwt: 'eyJ.x.y',
      }),
    ).not.toThrow()
    expect(() =>
      lexicons.assertValidXrpcInput('tickets.svc.claimFreeTicket', {
        eventUri: EVENT,
        ticketTypeId: 'tier_free',
        buyerDid: 'did:plc:buyer123',
        idempotencyKey: '',
      }),
    ).toThrow(/idempotencyKey/)
    expect(() =>
      lexicons.assertValidXrpcInput('tickets.svc.checkInTicket', { ticketToken: 'tok', checkInListId: 'list_1' }),
    ).not.toThrow()
    expect(() =>
      lexicons.assertValidXrpcInput('tickets.svc.configureTicketTiers', {
        environment: 'test',
        eventUri: EVENT,
        organizerDid: 'did:plc:organizer123',
        organizerAssertionJwt: 'eyJ.x.y',
        tiers: [
          { name: 'General admission', priceAmount: 2500, currency: 'usd', capacity: 100 },
          { ticketTypeId: 'tier_free', name: 'Free', priceAmount: 0, currency: 'usd', capacity: 10, salesEndAt: '2026-07-01T00:00:00Z' },
        ],
        holdDurationSeconds: 600,
      }),
    ).not.toThrow()
    expect(() =>
      lexicons.assertValidXrpcInput('tickets.svc.configureTicketTiers', {
        eventUri: EVENT,
        organizerDid: 'did:plc:organizer123',
        tiers: [{ name: 'GA', priceAmount: 25.5, currency: 'usd', capacity: 100 }],
      }),
    ).toThrow(/priceAmount/)
    expect(() =>
      lexicons.assertValidXrpcOutput('tickets.svc.getTicketAvailability', {
        eventUri: EVENT,
        items: [{ ticketTypeId: 'tier_ga', available: 98 }],
      }),
    ).not.toThrow()
  })

  test('listSubscriptions params: limit bounds and default', () => {
    expect(lexicons.assertValidXrpcParams('money.svc.payment.listSubscriptions', { role: 'payer' })).toEqual({
      role: 'payer',
      limit: 50,
    })
    expect(() => lexicons.assertValidXrpcParams('money.svc.payment.listSubscriptions', { role: 'payer', limit: 0 })).toThrow()
    expect(() =>
      lexicons.assertValidXrpcParams('money.svc.payment.listSubscriptions', { role: 'payer', limit: 101 }),
    ).toThrow()
  })
})
