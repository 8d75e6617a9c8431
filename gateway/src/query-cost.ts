/**
 * A validation rule bounding what one operation may ask of the subgraphs. The gateway is the one door to every
 * domain: a document that repeats a field under thousands of aliases, or nests list fields (approvals → recipient →
 * approvals …), would fan out into more subgraph requests and objects than any caller needs. Each operation is
 * costed before it runs: every field selected counts once per object it is selected on, a list field multiplies what
 * is under it by its `limit` argument (the default its SDL declares, else LIST_COST, when it has none), and an
 * operation above MAX_QUERY_COST is refused (400, before any subgraph is asked). The service's own documents cost at
 * most a few thousand. Validation is cached per document text and sees no variables: there a `limit: $l` counts as
 * its default, or the field's, or LIST_COST, and the request's own values are costed again before it runs
 * (costWithVariables, a preExecution hook).
 *
 * Introspection (`__schema`, `__type` and what is under them) is answered by the gateway itself from the schema, so
 * without aliases its answer is bounded by the schema (and graphql's own introspection depth rule); aliased, each
 * alias repeats it, and a 700-byte document asked for 100 MB. So no alias is taken on or under an introspection
 * field. A document holds at most MAX_OPERATIONS operations (one runs; each is costed when the document is
 * validated), and a `limit` that is not a plain integer (a document sent as a JSON AST can carry "200,") is refused.
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
  type OperationDefinitionNode,
  type ValueNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql'

export const MAX_QUERY_COST = 100_000
/** operations in one document: one runs, but validation walks each */
export const MAX_OPERATIONS = 10
/** fields at the top of one operation (each a subgraph request), `__typename` aside */
export const MAX_ROOT_FIELDS = 20
const INTROSPECTION_FIELDS = new Set(['__schema', '__type'])
const TOO_MUCH = MAX_QUERY_COST + 1
/** what a list field without a `limit`, and without a default one in its SDL, counts as */
export const LIST_COST = 20
/** deeper than any document of the service; also ends a walk through fragments that spread each other */
const MAX_DEPTH = 12
const MAX_INTROSPECTION_DEPTH = 40

/** The operation's variables: their values in this request, else their literal defaults. */
export type VariableValues = Record<string, unknown>

/** A `limit` argument's value as a count: a literal integer, or a variable's integer; null when absent or not a count. */
function limitOf(value: ValueNode | undefined, variables: VariableValues): number | null {
  if (value?.kind === Kind.INT) return Math.max(1, Number(value.value))
  if (value?.kind !== Kind.VARIABLE) return null
  const given = variables[value.name.value]
  return typeof given === 'number' && Number.isInteger(given) ? Math.max(1, given) : null
}

/** The `limit` a field's SDL declares as its default (`limit: Int = 200`): what the subgraph answers without one. */
function declaredLimit(field: GraphQLField<unknown, unknown>): number | null {
  const value = field.args.find((a) => a.name === 'limit')?.defaultValue
  return typeof value === 'number' && Number.isInteger(value) ? Math.max(1, value) : null
}

/**
 * The variables' literal integer defaults (`$l: Int = 5000`), overridden by the request's values when it has them: an
 * explicit null too, which GraphQL passes on as null (the default applies only to a variable not given), so the
 * field's own default is what the subgraph answers with.
 */
function withDefaults(operation: OperationDefinitionNode, values: VariableValues | null | undefined): VariableValues {
  const out: VariableValues = {}
  for (const def of operation.variableDefinitions ?? []) {
    if (def.defaultValue?.kind === Kind.INT && /^-?\d+$/.test(def.defaultValue.value)) out[def.variable.name.value] = Number(def.defaultValue.value)
  }
  for (const [name, value] of Object.entries(values ?? {})) if (value !== undefined) out[name] = value
  return out
}

export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  selectionSet: SelectionSetNode,
  root: GraphQLNamedType | null | undefined,
  variables: VariableValues = {},
): number {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def)
  /** `pageLimit`: the `limit` of the page `set` is the selection of, for the list fields directly in it */
  const walk = (set: SelectionSetNode, type: GraphQLNamedType | null | undefined, multiplier: number, depth: number, introspecting: boolean, pageLimit: number | null = null): number => {
    // introspection nests deeper (a type's ofType chain): graphql's own rule bounds it, this only ends a cycle
    if (depth > (introspecting ? MAX_INTROSPECTION_DEPTH : MAX_DEPTH)) return TOO_MUCH
    let total = 0
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const introspection = introspecting || INTROSPECTION_FIELDS.has(selection.name.value)
        if (introspection && selection.alias) return TOO_MUCH
        total += multiplier
        const field = isObjectType(type) || isInterfaceType(type) ? type.getFields()[selection.name.value] : undefined
        if (selection.selectionSet && introspection) {
          // the schema's own types (`__Schema`, `__Type`, …): walked for aliases only, their size is the schema's
          total += walk(selection.selectionSet, null, multiplier, depth + 1, true)
        } else if (selection.selectionSet && field) {
          const limit = selection.arguments?.find((a) => a.name.value === 'limit')?.value
          // a JSON AST's "200," is no integer (a negative one is the subgraph's to refuse)
          if (limit?.kind === Kind.INT && !/^-?\d+$/.test(limit.value)) return TOO_MUCH
          const given = limitOf(limit, variables) ?? declaredLimit(field)
          const list = isListType(getNullableType(field.type))
          const size = list ? (given ?? pageLimit ?? LIST_COST) : 1
          total += walk(selection.selectionSet, getNamedType(field.type), multiplier * size, depth + 1, false, list ? null : given)
        }
      } else if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value)
        if (fragment) total += walk(fragment.selectionSet, introspecting ? null : schema.getType(fragment.typeCondition.name.value), multiplier, depth + 1, introspecting, pageLimit)
      } else {
        total += walk(selection.selectionSet, introspecting ? null : selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : type, multiplier, depth + 1, introspecting, pageLimit)
      }
      // NaN (a count no walk can make, but never let it pass) is too much
      if (!(total <= MAX_QUERY_COST)) return TOO_MUCH
    }
    return total
  }
  return walk(selectionSet, root, 1, 0, false)
}

/** The fields at the top of an operation, through its fragments (`__typename` aside); stops counting past `most`. */
export function rootFieldCount(document: DocumentNode, selectionSet: SelectionSetNode, most: number): number {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def)
  let count = 0
  const visit = (set: SelectionSetNode, depth: number): void => {
    for (const selection of set.selections) {
      if (count > most || depth > MAX_DEPTH) return
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value !== '__typename') count++
      } else if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value)
        if (fragment) visit(fragment.selectionSet, depth + 1)
      } else visit(selection.selectionSet, depth + 1)
    }
  }
  visit(selectionSet, 0)
  return count
}

const rootOf = (schema: GraphQLSchema, operation: OperationDefinitionNode) =>
  operation.operation === 'mutation' ? schema.getMutationType() : operation.operation === 'subscription' ? schema.getSubscriptionType() : schema.getQueryType()

const TOO_COSTLY = `the operation asks too much at once (cost over ${MAX_QUERY_COST}: fewer aliases, smaller limits, less nesting)`

/**
 * The documents that give a `limit` by a variable, marked by the validation rule (mercurius validates a document once
 * and keeps the parsed document with its result, by text): only these are costed again with each request's values.
 */
export const LIMITS_BY_VARIABLE = new WeakSet<DocumentNode>()

/**
 * The cost of each operation of a document that gives a `limit` by a variable, with this request's variables: the
 * error to answer (400) when one is over MAX_QUERY_COST, else null. Every operation is costed, not only the one that
 * runs: a document of several (at most MAX_OPERATIONS) is refused when any is too costly with these values.
 */
export function costWithVariables(schema: GraphQLSchema, document: DocumentNode, variables: VariableValues | null | undefined): GraphQLError | null {
  for (const def of document.definitions) {
    if (def.kind !== Kind.OPERATION_DEFINITION) continue
    const cost = operationCost(schema, document, def.selectionSet, rootOf(schema, def), withDefaults(def, variables))
    if (!(cost <= MAX_QUERY_COST)) return new GraphQLError(TOO_COSTLY, { nodes: [def] })
  }
  return null
}

export const maxQueryCost: ValidationRule = (context) => {
  let tooMany = false
  return {
    Argument(node) {
      if (node.name.value === 'limit' && node.value.kind === Kind.VARIABLE) LIMITS_BY_VARIABLE.add(context.getDocument())
    },
    Document(node) {
      const operations = node.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION).length
      tooMany = operations > MAX_OPERATIONS
      if (tooMany) context.reportError(new GraphQLError(`a document holds at most ${MAX_OPERATIONS} operations (this one ${operations})`))
    },
    OperationDefinition(node) {
      // a document of too many is refused above: its operations are not walked
      if (tooMany) return
      const roots = rootFieldCount(context.getDocument(), node.selectionSet, MAX_ROOT_FIELDS)
      if (roots > MAX_ROOT_FIELDS) {
        context.reportError(new GraphQLError(`an operation selects at most ${MAX_ROOT_FIELDS} fields at its top (each is a subgraph request): split it`, { nodes: [node] }))
        return
      }
      const schema = context.getSchema()
      // no variables here (validation is cached per text): their defaults count
      const cost = operationCost(schema, context.getDocument(), node.selectionSet, rootOf(schema, node), withDefaults(node, null))
      if (!(cost <= MAX_QUERY_COST)) context.reportError(new GraphQLError(TOO_COSTLY, { nodes: [node] }))
    },
  }
}
