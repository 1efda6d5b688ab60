/** A process that bundles the workflows as a worker does at start, for a test to kill midway. */
import { bundleWorkflowsApart } from '../../../worker/workflow-bundle';

const bundle = await bundleWorkflowsApart();
bundle.remove();
