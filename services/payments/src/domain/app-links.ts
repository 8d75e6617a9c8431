/**
 * Catalog app links (money.svc.catalog.registerAppLink): an app's private fulfillment URL for a catalog record. One
 * link per (app, environment, record) under a unique index; last write wins (the URL and label are replaced, the id
 * and createdAt stay). Concurrent first registrations converge on one document: the loser of the insert retries as
 * an update.
 */
import { randomBytes } from 'node:crypto'
import { ContractError } from '@svc/errors'
import { isDuplicateKeyError, type AppLinkDoc } from '../models'
import { graphemeLength, hasControlCharacters, parseRecordUri } from '@svc/vocabulary'
import type { ServingPayments } from './context'
import type { AppLink as AppLinkView, RegisterAppLinkInput } from '../generated/graph-types'

export type { AppLinkView, RegisterAppLinkInput }

/** Record collections a fulfillment link can name: catalog products and tiers, and ticketed events. */
export const CATALOG_COLLECTIONS = ['money.svc.catalog.product', 'money.svc.catalog.tier', 'tickets.svc.event'] as const

const MAX_LABEL_GRAPHEMES = 100
const MAX_LABEL_LENGTH = 1000
const MAX_URL_LENGTH = 2048

function originOf(value: string): string | null {
  try {
    const url = new URL(value)
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return null
    if (url.username !== '' || url.password !== '') return null
    return url.origin
  } catch {
    return null
  }
}

type StoredLink = AppLinkDoc & { createdAt?: Date }

function toView(doc: StoredLink): AppLinkView {
  return {
    id: doc.linkId,
    recordUri: doc.recordUri,
    fulfillmentUrl: doc.fulfillmentUrl,
    label: doc.label ?? null,
    environment: doc.environment,
    createdAt: (doc.createdAt ?? new Date(0)).toISOString(),
  }
}

/**
 * The record must be a catalog record (NotFound otherwise) whose repository is a known actor of the environment (the
 * actors domain's fact: ActorNotFound), and the URL on the app's registered origin (the apps domain's fact).
 */
export async function registerAppLink(d: ServingPayments, input: { appDid: string; input: RegisterAppLinkInput }): Promise<AppLinkView> {
  const { recordUri, fulfillmentUrl } = input.input
  const record = typeof recordUri === 'string' ? parseRecordUri(recordUri) : null
  if (!record || !(CATALOG_COLLECTIONS as readonly string[]).includes(record.collection)) {
    throw new ContractError('NotFound', `recordUri must name a catalog record (${CATALOG_COLLECTIONS.join(', ')}) as at://<did>/<collection>/<rkey>`)
  }
  const facts = await d.facts.appLink(input.appDid, input.input.environment ?? null, record.repo)
  const environment = facts.environment
  if (!facts.repoKnown) throw new ContractError('NotFound', `the catalog record ${recordUri} is unknown in ${environment}`)
  const appOrigin = originOf(facts.appUrl)
  if (!appOrigin) throw new ContractError('InvalidRequest', "the app's registered URL is not an http(s) origin")
  if (typeof fulfillmentUrl !== 'string' || fulfillmentUrl.length > MAX_URL_LENGTH || /\s/.test(fulfillmentUrl) || originOf(fulfillmentUrl) !== appOrigin) {
    throw new ContractError('AppUrlNotAllowed', `fulfillmentUrl must be an http(s) URL on the registered app origin ${appOrigin}`)
  }
  let label: string | null = null
  if (input.input.label !== undefined && input.input.label !== null) {
    label = input.input.label.trim() || null
    if (label && (label.length > MAX_LABEL_LENGTH || graphemeLength(label) > MAX_LABEL_GRAPHEMES)) {
      throw new ContractError('InvalidRequest', `label must be at most ${MAX_LABEL_GRAPHEMES} characters`)
    }
    if (label && hasControlCharacters(label)) throw new ContractError('InvalidRequest', 'label must not contain control characters')
  }
  const key = { appDid: input.appDid, environment, recordUri }
  for (let attempt = 1; ; attempt++) {
    try {
      const doc = await d.models.AppLink.findOneAndUpdate(
        key,
        { $set: { fulfillmentUrl, label }, $setOnInsert: { ...key, linkId: `alk_${randomBytes(12).toString('hex')}` } },
        { upsert: true, returnDocument: 'after', lean: true },
      )
      if (!doc) throw new Error('app link upsert returned nothing')
      return toView(doc as StoredLink)
    } catch (err) {
      if (isDuplicateKeyError(err) && attempt < 5) continue
      throw err
    }
  }
}
