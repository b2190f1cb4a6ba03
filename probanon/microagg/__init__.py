"""Microaggregation: MDAV, V-MDAV, individual ranking and the fitted function they publish."""

from .function import MicroaggregationFunction, function_from_json
from .mdav import MDAV, MDAVPartition, mdav_partition
from .pcl import PCL, pcl_partition
from .ranking import IndividualRanking, individual_ranking, individual_ranking_partition
from .vmdav import VMDAV, vmdav_partition

METHODS = {"mdav": MDAV, "vmdav": VMDAV, "ranking": IndividualRanking, "pcl": PCL}

__all__ = [
    "MDAV", "VMDAV", "IndividualRanking", "PCL", "pcl_partition", "MDAVPartition", "MicroaggregationFunction", "METHODS",
    "mdav_partition", "vmdav_partition", "individual_ranking", "individual_ranking_partition", "function_from_json",
]

from .._validation import guard_public  # noqa: E402

guard_public(globals(), __all__)  # calls that do not fit a signature: our error

