/**
 * `npm run example:checkout`: the payments journey an app backend goes through, against a running service
 * (`npm run dev`), with the app SDK (@svc/sdk):
 *
 *   1. an app identity (did:key), registered in test by the operator (appUrl http://localhost:3000)
 *   2. a creator, created by the operator (payout onboarding not done yet)
 *   3. the app asks the creator for approval            money.svc.app.requestRecipientApproval
 *   4. the creator signs in to the dashboard, completes payout onboarding (test) and accepts the terms
 *   5. the app waits until the connection is ready       money.svc.app.getRecipientApproval
 *   6. the app starts a checkout and sends the buyer     network.svc.payment.initiate
 *   7. the buyer pays on the hosted page (4242 4242 4242 4242)
 *   8. the app's backend polls the payment to completed   network.svc.payment.status
 *
 * Steps 4 and 7 are a person in a browser: the script prints the links and waits. With `--auto` it plays the
 * creator and the buyer itself by posting the same HTML forms a browser would (nothing else differs).
 */
import Redis from 'ioredis'
import { connectActors, upsertActor } from '@svc/actors'
import { connectApps, registerApp } from '@svc/apps'
import { loadConfig } from '@svc/config'
import { createDashboardSessions, signInUrl } from '@svc/dashboard-session'
import { buildProduct, createSvcClient, generateDidKeyKeypair, initiateCheckout, isConnectionReady, pollPaymentStatus } from '@svc/sdk'

const auto = process.argv.includes('--auto')
const config = loadConfig()
const APP_URL = 'http://localhost:3000'

/** The value of a hidden form field in a dashboard page (what the browser would post back). */
function field(page: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(page)
  if (!m) throw new Error(`the page has no ${name} field`)
  return m[1]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'")
}

async function post(url: string, form: Record<string, string>, cookie?: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(form).toString(),
    redirect: 'manual',
  })
}

/** What the creator does in the browser: sign in, complete payout onboarding (test), accept the terms. */
async function creatorInBrowser(signInUrl: string, approvalId: string): Promise<void> {
  // the link's page asks; its Sign in button posts back the page's nonce, with the cookie the page set
  const asked = await fetch(signInUrl, { redirect: 'manual' })
  const askedPage = await asked.text()
  const nonceCookie = asked.headers.get('set-cookie')?.split(';')[0] ?? ''
  const signIn = await post(signInUrl.split('?')[0]!, { next: field(askedPage, 'next'), nonce: field(askedPage, 'nonce') }, nonceCookie)
  // `__Host-svc_dashboard` when the checkout host is https (docs/decisions.md, the dashboard's cookie names)
  const cookie = signIn.headers.get('set-cookie')?.split(/,\s*(?=(?:__Host-)?svc_)/).find((c) => /^(?:__Host-)?svc_dashboard=/.test(c))?.split(';')[0]
  if (!cookie) throw new Error(`sign-in failed (${signIn.status})`)
  const onboarding = `${config.dashboardUrl}/onboarding/${approvalId}`
  let page = await (await fetch(onboarding, { headers: { cookie } })).text()
  await post(`${config.dashboardUrl}/payouts/onboard`, { csrf: field(page, 'csrf'), next: new URL(onboarding).pathname }, cookie)
  page = await (await fetch(onboarding, { headers: { cookie } })).text()
  const accepted = await post(`${config.dashboardUrl}/approvals/${approvalId}/accept`, { csrf: field(page, 'csrf'), termsHash: field(page, 'termsHash'), from: 'onboarding' }, cookie)
  console.log(`   (auto) creator accepted; the dashboard sends them back to ${accepted.headers.get('location')}`)
}

async function main() {
  // 1-2: the operator's part
  const app = await generateDidKeyKeypair('ES256K')
  const creatorDid = `did:plc:example${Date.now().toString(36)}`
  const apps = await connectApps(config.mongoUrl)
  await registerApp({ models: apps.models }, { did: app.did, environment: 'test', appUrl: APP_URL, feeShareBps: 500, ticketFee: { bps: 290, flatAmount: 30, flatCurrency: 'usd' } })
  await apps.conn.close()
  const actors = await connectActors(config.mongoUrl)
  await upsertActor({ models: actors.models }, { did: creatorDid, environment: 'test', displayName: 'Ada Example' })
  await actors.conn.close()
  console.log(`1. app ${app.did} registered in test (appUrl ${APP_URL})`)
  console.log(`2. creator ${creatorDid} (payout onboarding not done)`)

  const client = createSvcClient({ baseUrl: config.baseUrl, appDid: app.did, serviceDid: config.serviceDid, keypair: app.keypair })

  // 3: ask for approval
  const request = await client.requestRecipientApproval({
    recipientDid: creatorDid,
    environment: 'test',
    paymentTypes: ['tip'],
    feeShareBps: 500,
    requestReason: 'Tips from your viewers',
    setupReturnUrl: `${APP_URL}/creators/connected`,
  })
  console.log(`3. approval request ${request.id}: ${request.status}; the creator goes to ${request.onboardingUrl}`)

  // 4: the creator (a dashboard session: here a sign-in link, as `npm run operator:actors -- dashboard-link` prints)
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2 })
  const { token } = await createDashboardSessions({ redis, prefix: `${config.redisPrefix}dash:` }).issueLoginLink({ actorDid: creatorDid, environment: 'test' })
  redis.disconnect()
  const signIn = signInUrl(config.dashboardUrl, token, new URL(request.onboardingUrl).pathname)
  if (auto) await creatorInBrowser(signIn, request.id)
  else console.log(`4. as the creator, open (once, within 15 minutes):\n   ${signIn}\n   complete payout onboarding, then accept the terms`)

  // 5: wait for a ready connection (approved + payment setup ready)
  for (;;) {
    if (isConnectionReady(await client.getRecipientApproval({ recipientDid: creatorDid, environment: 'test' }))) break
    await new Promise((r) => setTimeout(r, 2000))
  }
  console.log('5. connection ready: approved, payment setup ready')

  // 6: start a checkout
  const product = buildProduct({
    recipientDid: creatorDid,
    paymentType: 'tip',
    amount: 500,
    currency: 'usd',
    appOrderId: `tip-${Date.now()}`,
    description: 'A tip for Ada',
    returnUrl: `${APP_URL}/tips/thanks`,
    cancelUrl: `${APP_URL}/tips`,
    environment: 'test',
  })
  const checkout = await initiateCheckout(client, product)
  console.log(`6. checkout started: keep the status token; send the buyer to\n   ${checkout.url}`)

  // 7: the buyer
  if (auto) {
    const paid = await post(`${checkout.url}/pay`, { number: '4242 4242 4242 4242', expiry: '12/40', cvc: '123', name: 'Bea Buyer' })
    console.log(`   (auto) buyer paid with 4242…; the page sends them to ${paid.headers.get('location')}`)
  } else console.log('7. as the buyer, open it and pay with 4242 4242 4242 4242 (any future expiry, any CVC)')

  // 8: poll to completed or failed
  const final = await pollPaymentStatus(client, checkout.token, { timeoutMs: 15 * 60_000 })
  console.log(`8. payment ${final.status}${final.ref ? `: record ${final.ref.uri}\n   cid ${final.ref.cid}` : ''}`)
  if (final.status !== 'completed') process.exit(1)
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err)
  console.error('Is the service running? Start it with `npm run dev`.')
  process.exit(1)
})
