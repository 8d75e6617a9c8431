/**
 * `npm run example:get-config`: what an app backend does, end to end, against a running service
 * (`npm run dev`): make a did:key identity, have the operator register it in test, mint a service-auth
 * JWT for money.svc.app.getConfig, and call the XRPC API.
 */
import { loadConfig } from '@svc/config'
import { connectApps, registerApp } from '@svc/apps'
import { generateDidKeyKeypair, mintServiceJwt } from '@svc/service-auth'

async function main() {
  const config = loadConfig()
  const app = await generateDidKeyKeypair('ES256K')
  console.log(`1. app identity          ${app.did}`)

  const { conn, models } = await connectApps(config.mongoUrl)
  await registerApp({ models }, { did: app.did, environment: 'test', appUrl: 'http://localhost:3000', feeShareBps: 250 })
  await conn.close()
  console.log('2. registered in test    (what `npm run operator -- register-app` does)')

  const nsid = 'money.svc.app.getConfig'
  const jwt = await mintServiceJwt({ keypair: app.keypair, iss: app.did, aud: config.serviceDid, lxm: nsid })
  console.log(`3. service-auth JWT      iss=${app.did.slice(0, 24)}… aud=${config.serviceDid} lxm=${nsid}`)

  const url = `${config.baseUrl}/xrpc/${nsid}?environment=test`
  const res = await fetch(url, { headers: { authorization: `Bearer ${jwt}` } })
  console.log(`4. GET ${url}\n   ${res.status} Svc-Request-Id: ${res.headers.get('svc-request-id')}`)
  console.log(JSON.stringify(await res.json(), null, 2))
  if (!res.ok) process.exit(1)
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err)
  console.error('Is the service running? Start it with `npm run dev`.')
  process.exit(1)
})
