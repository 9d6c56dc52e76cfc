"""The build step pyproject.toml cannot declare: the message catalogues
(translations/*/LC_MESSAGES/*.po) are compiled to .mo inside the build, so a wheel ships
them compiled while the repository keeps only the .po (webapp/web/i18n.py)."""

from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from setuptools import setup
from setuptools.command.build_py import build_py

SOURCE = Path(__file__).resolve().parent / "translations"


class build_py_with_catalogues(build_py):
    def run(self) -> None:
        super().run()
        # An editable install reads translations/ in place: compile there instead
        target = SOURCE if self.editable_mode else Path(self.build_lib, "webapp", "translations")
        for po in sorted(SOURCE.glob("*/LC_MESSAGES/*.po")):
            mo = target / po.relative_to(SOURCE).with_suffix(".mo")
            mo.parent.mkdir(parents=True, exist_ok=True)
            with po.open("rb") as source, mo.open("wb") as out:
                write_mo(out, read_po(source, locale=po.parts[-3]))


setup(cmdclass={"build_py": build_py_with_catalogues})
