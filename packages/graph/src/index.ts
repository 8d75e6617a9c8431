/**
 * `graphql(`…`)`: a document sent to the gateway, typed from the composed schema. Write the document inline with it;
 * `npm run generate` types it (its result and variables), and the gateway client takes its types from it.
 */
export { graphql } from './generated'
export type { DocumentTypeDecoration, ResultOf, VariablesOf } from '@graphql-typed-document-node/core'
export * as GraphTypes from './generated/graphql'
