import { graphql } from '@svc/graph'
import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { renameErrors, type HandlerContext } from './types'
import { INPUT_KEYS } from '@svc/lexicons/types'

const REGISTER_APP_LINK = graphql(`mutation RegisterAppLink($input: RegisterAppLinkInput!) {
  registerAppLink(input: $input) { id recordUri fulfillmentUrl label environment createdAt }
}`)

/**
 * The payments domain checks the record (a catalog record whose repository is a known actor of the environment,
 * else NotFound) and the URL against the app's registered origin, and keeps one link per app, environment and record.
 */
export async function registerAppLink({ input, graph }: HandlerContext<'money.svc.catalog.registerAppLink'>) {
  assertOnlyKeys(input, INPUT_KEYS['money.svc.catalog.registerAppLink'], (f) => `${f} is not accepted`)
  const { registerAppLink: l } = await graph(REGISTER_APP_LINK, { input }).catch(renameErrors({ ...APP_ACCESS_ERRORS, ActorNotFound: 'NotFound' }))
  return {
    id: l.id,
    recordUri: l.recordUri,
    fulfillmentUrl: l.fulfillmentUrl,
    ...(l.label != null ? { label: l.label } : {}),
    environment: l.environment,
    createdAt: l.createdAt,
  }
}
