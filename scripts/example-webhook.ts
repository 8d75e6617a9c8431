/**
 * `npm run example:webhook`: receiving signed events, against a running service (`npm run dev`), with the app SDK:
 *
 *   1. an app identity (did:key), registered in test by the operator, and a test API key with the three
 *      webhook permissions (what `npm run operator -- quickstart` prints)
 *   2. the app's receiver: a local HTTP server verifying with the SDK's createWebhookRequestHandler
 *   3. the app points its webhook at the receiver and gets its signing secret, once   money.svc.app.updateConfig
 *   4. the developer sends a test event                         POST {checkout_url}/api/app/developer/test-event
 *   5. the receiver gets it, verified (Standard Webhooks signature, svc-api-version)
 *   6. the developer reads the delivery log                     GET  {checkout_url}/api/webhooks/atm
 *   7. and redrives the delivery: the same id arrives again     POST {checkout_url}/api/webhooks/atm
 *
 * The receiver listens on 127.0.0.1 (a free port), which the dev command's DEV_ALLOW_LOOPBACK_WEBHOOKS allows in test.
 */
import { createServer } from 'node:http'
import { buffer } from 'node:stream/consumers'
import type { AddressInfo } from 'node:net'
import { connectApps, issueApiKey, registerApp } from '@svc/apps'
import { loadConfig } from '@svc/config'
import { createDeveloperClient, createMemoryClaimStore, createSvcClient, createWebhookRequestHandler, generateDidKeyKeypair, type DeliveryLogEntry } from '@svc/sdk'

const MAX_BODY_BYTES = 1024 * 1024

const config = loadConfig()

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const value = probe()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

async function main() {
  // 1: the operator's part
  const app = await generateDidKeyKeypair('ES256K')
  const apps = await connectApps(config.mongoUrl)
  await registerApp({ models: apps.models }, { did: app.did, environment: 'test', appUrl: 'http://localhost:3000', feeShareBps: 0, ticketFee: { bps: 0, flatAmount: 0, flatCurrency: 'usd' } })
  const { key: apiKey } = await issueApiKey({ models: apps.models }, {
    appDid: app.did,
    environment: 'test',
    permissions: ['webhook.test.write', 'webhook.deliveries.read', 'webhook.deliveries.redrive'],
  })
  await apps.conn.close()
  console.log(`1. app ${app.did} registered in test, API key ${apiKey.slice(0, 18)}…`)

  // 2: the receiver (its handler is built once the secret is known)
  const received: { id: string; type: string; duplicate: boolean }[] = []
  const receiver: { handle?: ReturnType<typeof createWebhookRequestHandler> } = {}
  const server = createServer((req, res) => {
    void (async () => {
      // a delivery is a few kilobytes: refuse anything far larger before reading it
      if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return res.writeHead(413).end()
      const body = await buffer(req)
      if (body.length > MAX_BODY_BYTES) return res.writeHead(413).end()
      const answer = receiver.handle ? await receiver.handle({ rawBody: body, headers: req.headers }) : { status: 503, body: { error: 'NotReady' } }
      if (answer.status === 200) {
        const envelope = JSON.parse(body.toString('utf8')) as { id: string; type: string }
        received.push({ id: envelope.id, type: envelope.type, duplicate: (answer.body as { duplicate?: boolean }).duplicate === true })
      }
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body))
    })().catch(() => res.destroy()) // a request cut off while its body was read
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const webhookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/svc`
  console.log(`2. receiver listening at ${webhookUrl}`)

  // 3: configure the webhook; the response carries the signing secret this once
  const client = createSvcClient({ baseUrl: config.baseUrl, appDid: app.did, serviceDid: config.serviceDid, keypair: app.keypair })
  const updated = await client.updateConfig({ environment: 'test', webhookUrl })
  const secret = updated.webhook.signingSecret
  if (!secret) throw new Error('updateConfig did not return the signing secret')
  console.log(`3. webhook configured: ${updated.webhook.configured}; signing secret whsec_…${secret.slice(-4)} (store it; an update naming the URL shows it again)`)
  receiver.handle = createWebhookRequestHandler({
    secret,
    store: createMemoryClaimStore(),
    handlers: {},
    // a test event is a probe: it is acknowledged and never reaches fulfilment handlers
    onTestEvent: async (envelope) => {
      console.log(`   (receiver) test probe ${envelope.id}, created ${envelope.createdAt}`)
    },
  })

  // 4-5: a test event, through the developer routes with the API key
  const developer = createDeveloperClient({ checkoutUrl: config.checkoutUrl, appDid: app.did, apiKey })
  const { deliveryId } = await developer.sendTestEvent()
  console.log(`4. test event queued: ${deliveryId}`)
  await waitFor('the test event', () => received.find((r) => r.id === deliveryId))
  console.log(`5. receiver verified and acknowledged ${deliveryId} (app.webhook.test)`)

  // 6: the delivery log
  let entry: DeliveryLogEntry | undefined
  for (let i = 0; i < 100 && entry?.status !== 'delivered'; i++) {
    entry = (await developer.listDeliveries({ limit: 5 })).find((d) => d.id === deliveryId)
    if (entry?.status !== 'delivered') await new Promise((r) => setTimeout(r, 100))
  }
  console.log(`6. delivery log: ${deliveryId} ${String(entry?.status)} after ${String(entry?.attemptCount)} attempt(s)`)

  // 7: redrive it: the same id arrives again and the receiver answers it as already processed
  const redrive = await developer.redriveDelivery(deliveryId)
  console.log(`7. redrive queued ${redrive.queued}`)
  const again = await waitFor('the redriven delivery', () => received.filter((r) => r.id === deliveryId)[1])
  console.log(`   the receiver got ${deliveryId} again and answered it as ${again.duplicate ? 'already processed (2xx)' : 'new'}`)

  server.close()
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
