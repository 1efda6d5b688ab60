/** The floor's local activity: a round trip through the worker that does no work. */
export async function floorStep(): Promise<void> {
  // Nothing: what is measured is what running any local activity costs.
}
