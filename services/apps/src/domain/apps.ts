/** Registered apps as the operator and the creator's approval pages read them. */
import type { AppsDomain } from './context'
import { toAppConfigView, type AppConfigView } from './app-config-view'

/** The app of a DID, or null when it is not registered. */
export async function findApp(d: Pick<AppsDomain, 'models'>, did: string) {
  if (typeof did !== 'string') return null // never a query operator from a caller's variables
  return d.models.App.findOne({ did }).lean()
}

/** Every configured environment of an app, in environment order. */
export async function listAppEnvironments(d: Pick<AppsDomain, 'models'>, appDid: string): Promise<AppConfigView[]> {
  const docs = await d.models.AppEnvironment.find({ appDid }).sort({ environment: 1 }).lean()
  return docs.map(toAppConfigView)
}
