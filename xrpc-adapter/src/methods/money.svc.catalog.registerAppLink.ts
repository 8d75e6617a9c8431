import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

/**
 * The payments domain checks the record (a catalog record whose repository is a known actor of the environment,
 * else NotFound) and the URL against the app's registered origin, and keeps one link per app, environment and record.
 */
export const registerAppLink = gatewayMethod({
  nsid: 'money.svc.catalog.registerAppLink',
  auth: 'app',
  check: (call) => assertOnlyKeys(call.input, { environment: true, recordUri: true, fulfillmentUrl: true, label: true }, (f) => `${f} is not accepted`),
  operation: graphql(`mutation RegisterAppLink($input: RegisterAppLinkInput!) {
    registerAppLink(input: $input) { id recordUri fulfillmentUrl label environment createdAt }
  }`),
  variables: ({ input }) => ({ input }),
  output: ({ registerAppLink: l }) => ({
    id: l.id,
    recordUri: l.recordUri,
    fulfillmentUrl: l.fulfillmentUrl,
    ...(l.label != null ? { label: l.label } : {}),
    environment: l.environment,
    createdAt: l.createdAt,
  }),
  errors: { ...APP_ACCESS_ERRORS, ActorNotFound: 'NotFound' },
})
