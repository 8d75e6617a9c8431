/**
 * A validation rule bounding what one operation may ask of the subgraphs. The gateway is the one door to every
 * domain: a document that repeats a field under thousands of aliases, or nests list fields (approvals → recipient →
 * approvals …), would fan out into more subgraph requests and objects than any caller needs. Each operation is
 * costed before it runs: every field selected counts once per object it is selected on, a list field multiplies what
 * is under it by its literal `limit` argument (LIST_COST when it has none, or a variable), and an operation above
 * MAX_QUERY_COST is refused (400, before any subgraph is asked). The service's own documents cost at most a few
 * thousand.
 */
import {
  GraphQLError,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql'

export const MAX_QUERY_COST = 100_000
/** what a list field without a literal `limit` counts as */
export const LIST_COST = 20
/** deeper than any document of the service; also ends a walk through fragments that spread each other */
const MAX_DEPTH = 12

export function operationCost(schema: GraphQLSchema, document: DocumentNode, selectionSet: SelectionSetNode, root: GraphQLNamedType | null | undefined): number {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def)
  const walk = (set: SelectionSetNode, type: GraphQLNamedType | null | undefined, multiplier: number, depth: number): number => {
    if (depth > MAX_DEPTH) return MAX_QUERY_COST + 1
    let total = 0
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        total += multiplier
        const field = isObjectType(type) || isInterfaceType(type) ? type.getFields()[selection.name.value] : undefined
        if (selection.selectionSet && field) {
          const limit = selection.arguments?.find((a) => a.name.value === 'limit')?.value
          const size = isListType(getNullableType(field.type)) ? (limit?.kind === Kind.INT ? Math.max(1, Number(limit.value)) : LIST_COST) : 1
          total += walk(selection.selectionSet, getNamedType(field.type), multiplier * size, depth + 1)
        }
      } else if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value)
        if (fragment) total += walk(fragment.selectionSet, schema.getType(fragment.typeCondition.name.value), multiplier, depth + 1)
      } else {
        total += walk(selection.selectionSet, selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : type, multiplier, depth + 1)
      }
      if (total > MAX_QUERY_COST) return total
    }
    return total
  }
  return walk(selectionSet, root, 1, 0)
}

export const maxQueryCost: ValidationRule = (context) => ({
  OperationDefinition(node) {
    const schema = context.getSchema()
    const root = node.operation === 'mutation' ? schema.getMutationType() : node.operation === 'subscription' ? schema.getSubscriptionType() : schema.getQueryType()
    const cost = operationCost(schema, context.getDocument(), node.selectionSet, root)
    if (cost > MAX_QUERY_COST) {
      context.reportError(new GraphQLError(`the operation asks too much at once (cost over ${MAX_QUERY_COST}: fewer aliases, smaller limits, less nesting)`, { nodes: [node] }))
    }
  },
})
