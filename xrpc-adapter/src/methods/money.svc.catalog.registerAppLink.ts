import { ContractError } from '@svc/errors'
import { parseRecordUri } from '@svc/vocabulary'
import { APP_ACCESS_ERRORS, environmentOf } from './app-access'
import { assertOnlyKeys } from './strict-body'
import type { GatewayMethod, MethodCall } from './types'

/** Record collections a fulfillment link can name: catalog products and tiers, and ticketed events. */
export const CATALOG_COLLECTIONS = ['money.svc.catalog.product', 'money.svc.catalog.tier', 'tickets.svc.event'] as const

/** `at://<repo DID>/<collection>/<rkey>`; a record outside the catalog collections is unknown (NotFound). */
function catalogRecord(call: MethodCall): { repo: string } {
  const record = parseRecordUri(call.input.recordUri)
  if (!record || !(CATALOG_COLLECTIONS as readonly string[]).includes(record.collection)) {
    throw new ContractError('NotFound', `recordUri must name a catalog record (${CATALOG_COLLECTIONS.join(', ')}) as at://<did>/<collection>/<rkey>`)
  }
  return { repo: record.repo }
}

/**
 * The precheck proves the record's repository is a known actor of the environment (else NotFound) and reads the
 * app's registered origin; the payments domain keeps one link per app, environment and record.
 */
export const registerAppLink: GatewayMethod<
  { registerAppLink: { id: string; recordUri: string; fulfillmentUrl: string; label: string | null; environment: string; createdAt: string } },
  { appAccess: { environment: string; config: { appUrl: string } } }
> = {
  nsid: 'money.svc.catalog.registerAppLink',
  auth: 'app',
  check: (call) => {
    assertOnlyKeys(call.input, { environment: true, recordUri: true, fulfillmentUrl: true, label: true }, (f) => `${f} is not accepted`)
    catalogRecord(call)
  },
  precheck: {
    operation: `query AppLinkPrecheck($environment: String, $repo: String!) {
      appAccess(environment: $environment) { environment config { appUrl } repo: profile(actor: $repo) { did } }
    }`,
    variables: (call) => ({ environment: environmentOf(call.input.environment), repo: catalogRecord(call).repo }),
  },
  operation: `mutation RegisterAppLink($input: RegisterAppLinkInput!, $appOrigin: String!) {
    registerAppLink(input: $input, appOrigin: $appOrigin, recordKnown: true) { id recordUri fulfillmentUrl label environment createdAt }
  }`,
  variables: ({ input }, { appAccess: a }) => ({ input: { ...input, environment: a.environment }, appOrigin: new URL(a.config.appUrl).origin }),
  output: ({ registerAppLink: l }) => ({
    id: l.id,
    recordUri: l.recordUri,
    fulfillmentUrl: l.fulfillmentUrl,
    ...(l.label != null ? { label: l.label } : {}),
    environment: l.environment,
    createdAt: l.createdAt,
  }),
  errors: { ...APP_ACCESS_ERRORS, ActorNotFound: 'NotFound' },
}
