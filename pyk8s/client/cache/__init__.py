"""Informers (upstream: client-go/tools/cache): a Reflector lists and watches one resource into a DeltaFIFO;
a SharedIndexInformer pops the deltas into an Indexer and tells its event handlers; a SharedInformerFactory
shares one informer per resource among every controller of a process; listers read the indexer."""

from .delta_fifo import DeletedFinalStateUnknown, Delta, DeltaFIFO, DeltaType
from .factory import GenericInformer, SharedInformerFactory
from .indexer import NAMESPACE_INDEX, Indexer, meta_namespace_key, split_meta_namespace_key
from .listers import GenericLister, NamespaceLister
from .reflector import Reflector
from .shared_informer import ResourceEventHandler, ResourceEventHandlerRegistration, SharedIndexInformer

__all__ = [
    "NAMESPACE_INDEX",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "GenericInformer",
    "GenericLister",
    "Indexer",
    "NamespaceLister",
    "Reflector",
    "ResourceEventHandler",
    "ResourceEventHandlerRegistration",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "meta_namespace_key",
    "split_meta_namespace_key",
]
